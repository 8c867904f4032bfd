package sysshm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// object creates name in dir holding data.
func object(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantStatus(t *testing.T, err error, status int, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %d %q", status, substr)
	}
	if got := StatusOf(err); got != status || !strings.Contains(err.Error(), substr) {
		t.Fatalf("got %d %q; want %d containing %q", got, err, status, substr)
	}
}

var lim = Limits{Regions: 4, Bytes: 1 << 20}

func TestRegisterRefusesNamesOutsideTheDir(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	secret := object(t, t.TempDir(), "secret", make([]byte, 64))
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	object(t, dir, "supervisor-respcache.1.m.1024", make([]byte, 64))
	object(t, dir, "supervisor-0123456789abcdef.1.scoreboard", make([]byte, 64))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	object(t, filepath.Join(dir, "sub"), "x", make([]byte, 64))
	for key, want := range map[string]string{
		"/link":    "symbolic link",
		"link":     "symbolic link",
		"/sub/x":   "may hold no '/'",
		"/../etc":  "may hold no '/'",
		"/..":      "names no object",
		"/":        "names no object",
		"/missing": "no such object",
		"/sub":     "", // a directory: refused whatever the words
		// The server's own: a response cache segment, a scoreboard.
		"/supervisor-respcache.1.m.1024":            "server's own objects",
		"/supervisor-0123456789abcdef.1.scoreboard": "server's own objects",
	} {
		err := r.Register("", "r", key, 0, 16, lim)
		if err == nil || StatusOf(err) != 400 || !strings.Contains(err.Error(), want) {
			t.Errorf("key %q: got %v (%d); want 400 with %q", key, err, StatusOf(err), want)
		}
	}
	if regions, _ := r.Status("", ""); len(regions) != 0 {
		t.Fatalf("refused keys left regions: %+v", regions)
	}
}

func TestRegisterChecksSizesAndOffsets(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	object(t, dir, "obj", make([]byte, 100))
	wantStatus(t, r.Register("", "a", "/obj", 0, 101, lim), 400, "holds 100 bytes")
	wantStatus(t, r.Register("", "a", "/obj", 90, 11, lim), 400, "holds 100 bytes")
	wantStatus(t, r.Register("", "a", "/obj", 1<<63, 1<<63, lim), 400, "overflows")
	wantStatus(t, r.Register("", "a", "/obj", ^uint64(0), 2, lim), 400, "overflows")
	wantStatus(t, r.Register("", "a", "/obj", 0, 0, lim), 400, "byte_size is 0")
	if err := r.Register("", "a", "/obj", 90, 10, lim); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r.Register("", "a", "/obj", 0, 10, lim), 400, "already registered")
}

func TestRegionIsTheRegisteringKeys(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	object(t, dir, "obj", []byte("0123456789"))
	if err := r.Register("alice", "r", "/obj", 2, 4, lim); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get("bob", "r"); err == nil {
		t.Fatal("bob got alice's region")
	}
	if got, _ := r.Status("bob", ""); len(got) != 0 {
		t.Fatalf("bob's status lists %+v", got)
	}
	_, err := r.Status("bob", "r")
	wantStatus(t, err, 404, "not registered")
	r.Unregister("bob", "") // bob's unregister-all leaves alice's
	g, release, err := r.Get("alice", "r")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	b := make([]byte, 4)
	if err := g.ReadAt(b, 0); err != nil || string(b) != "2345" {
		t.Fatalf("read %q, %v; want 2345", b, err)
	}
	wantStatus(t, g.ReadAt(make([]byte, 3), 2), 400, "do not fit")
}

func TestLimitsPerKey(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	object(t, dir, "obj", make([]byte, 3<<12))
	small := Limits{Regions: 2, Bytes: 2 << 12}
	if err := r.Register("k", "a", "/obj", 0, 1<<12, small); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r.Register("k", "b", "/obj", 0, 2<<12, small), 400, "limits.shared_memory_bytes")
	if err := r.Register("k", "b", "/obj", 1<<12, 1<<12, small); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r.Register("k", "c", "/obj", 0, 1, small), 400, "limits.shared_memory_regions")
	if err := r.Register("other", "c", "/obj", 0, 1, small); err != nil {
		t.Fatalf("another key is bound on its own: %v", err)
	}
	r.Unregister("k", "a")
	if err := r.Register("k", "c", "/obj", 0, 1, small); err != nil {
		t.Fatalf("after an unregister: %v", err)
	}
}

// TestObjectChangedUnderTheServer: an object truncated or unlinked after
// registration is refused 400 (ErrGone), and a copy that faults on a
// truncated mapping is contained: this test process survives it.
func TestObjectChangedUnderTheServer(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	p := object(t, dir, "obj", make([]byte, 3<<12))
	if err := r.Register("", "r", "/obj", 1<<12, 2<<12, lim); err != nil {
		t.Fatal(err)
	}
	g, release, err := r.Get("", "r")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := os.Truncate(p, 1<<12); err != nil {
		t.Fatal(err)
	}
	err = g.ReadAt(make([]byte, 16), 0)
	if !errors.Is(err, ErrGone) {
		t.Fatalf("read of a truncated object: %v; want ErrGone", err)
	}
	wantStatus(t, err, 400, "holds 4096 bytes")
	// Past the fstat: the copy itself faults (SIGBUS), contained.
	err = g.guardedCopy(make([]byte, 16), g.mem[g.base:g.base+16])
	if !errors.Is(err, ErrGone) || StatusOf(err) != 400 {
		t.Fatalf("a faulting copy: %v; want 400 ErrGone", err)
	}
	if err := os.Truncate(p, 3<<12); err != nil {
		t.Fatal(err)
	}
	if err := g.ReadAt(make([]byte, 2), 0); err != nil {
		t.Fatalf("grown back: %v", err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, g.ReadAt(make([]byte, 1), 0), 400, "was unlinked")
}

// TestUnregisterWaitsForCopies: a region unregistered while a copy holds
// it stays mapped until the copy is released.
func TestUnregisterWaitsForCopies(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	object(t, dir, "obj", []byte("abcd"))
	if err := r.Register("", "r", "/obj", 0, 4, lim); err != nil {
		t.Fatal(err)
	}
	g, release, err := r.Get("", "r")
	if err != nil {
		t.Fatal(err)
	}
	r.Unregister("", "")
	if _, _, err := r.Get("", "r"); err == nil {
		t.Fatal("an unregistered region was handed out")
	}
	b := make([]byte, 4)
	if err := g.ReadAt(b, 0); err != nil || string(b) != "abcd" {
		t.Fatalf("copy in flight: %q %v", b, err)
	}
	release()
	if g.mem != nil {
		t.Fatal("not unmapped after the last copy")
	}
}

// TestRetainDropsRemovedKeys: a reload that removes a key drops its
// regions (unmapped), and keeps the others'.
func TestRetainDropsRemovedKeys(t *testing.T) {
	dir := t.TempDir()
	r := newIn(dir)
	object(t, dir, "obj", make([]byte, 16))
	for _, o := range []string{"kept", "removed"} {
		if err := r.Register(o, "r", "/obj", 0, 16, lim); err != nil {
			t.Fatal(err)
		}
	}
	g, release, _ := r.Get("removed", "r")
	release()
	r.Retain(map[string]bool{"kept": true})
	if got, _ := r.Status("removed", ""); len(got) != 0 || g.mem != nil {
		t.Errorf("the removed key's regions: %+v, mapped %t", got, g.mem != nil)
	}
	if got, _ := r.Status("kept", ""); len(got) != 1 {
		t.Errorf("the kept key's regions: %+v", got)
	}
}

func TestParseRoute(t *testing.T) {
	for path, want := range map[string]string{
		Prefix + "/status":              "status  GET",
		Prefix + "/region/a/status":     "status a GET",
		Prefix + "/region/a/register":   "register a POST",
		Prefix + "/region/a/unregister": "unregister a POST",
		Prefix + "/unregister":          "unregister  POST",
		Prefix + "/register":            "",
		Prefix + "/region//status":      "",
		Prefix + "/region/a/b/status":   "",
		Prefix + "/region/a/frob":       "",
		Prefix:                          "",
		Prefix + "x/status":             "",
	} {
		op, name, method, ok := ParseRoute(path)
		got := ""
		if ok {
			got = op + " " + name + " " + method
		}
		if got != want {
			t.Errorf("%s: got %q; want %q", path, got, want)
		}
	}
}
