package rundir

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// TestRuntimeDirCreatedPrivateDespiteUmask: a dir the master creates is
// 0700 even under a umask that strips the owner's bits.
func TestRuntimeDirCreatedPrivateDespiteUmask(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "run")
	old := syscall.Umask(0o777)
	rd, err := Prepare(dir, false)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 || !rd.created {
		t.Fatalf("created runtime dir: mode %#o, created %t; want 0700, true", perm, rd.created)
	}
}

// TestRuntimeDirRefusesWhatIsNotOurs: a dir another user owns, a symlink
// (even to a dir of ours) and a dir group or others may write are refused
// with control.ErrUnsafeRuntimeDir; 0700 and 0711 dirs of ours are accepted.
func TestRuntimeDirRefusesWhatIsNotOurs(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ours := mk("ours", 0o700)
	link := filepath.Join(base, "link")
	if err := os.Symlink(ours, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		dir  string
		ok   bool
	}{
		{"0700 of ours", ours, true},
		{"0711 of ours", mk("traversable", 0o711), true},
		{"symlink to a dir of ours", link, false},
		{"group-writable", mk("groupw", 0o770), false},
		{"world-writable", mk("worldw", 0o777), false},
	}
	if os.Geteuid() == 0 {
		if nobody, err := user.Lookup("nobody"); err == nil {
			uid, _ := strconv.Atoi(nobody.Uid)
			theirs := mk("theirs", 0o700)
			if err := os.Chown(theirs, uid, -1); err != nil {
				t.Fatal(err)
			}
			cases = append(cases, struct {
				name string
				dir  string
				ok   bool
			}{"owned by nobody", theirs, false})
		}
	} else {
		// Not root: a dir root owns is someone else's.
		cases = append(cases, struct {
			name string
			dir  string
			ok   bool
		}{"owned by root", "/", false})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Prepare(c.dir, false)
			if c.ok && err != nil {
				t.Fatalf("Prepare(%q): %v, want it accepted", c.dir, err)
			}
			if !c.ok && !errors.Is(err, control.ErrUnsafeRuntimeDir) {
				t.Fatalf("Prepare(%q): %v, want control.ErrUnsafeRuntimeDir", c.dir, err)
			}
			// An upgraded master checks the dir it inherits just the same.
			if _, err := Prepare(c.dir, true); c.ok != (err == nil) {
				t.Fatalf("inherited Prepare(%q): %v, want ok %t", c.dir, err, c.ok)
			}
		})
	}
}

// TestPIDFileNotWrittenThroughSymlink: a symlink planted as the pid file
// is replaced, and the file it pointed to is left alone.
func TestPIDFileNotWrittenThroughSymlink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	rd, err := Prepare(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, control.PIDFile(dir)); err != nil {
		t.Fatal(err)
	}
	if err := rd.Own(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	fi, err := os.Lstat(control.PIDFile(dir))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("pid file after own: %v, %v; want a regular file", fi, err)
	}
	b, _ := os.ReadFile(control.PIDFile(dir))
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(os.Getpid()) {
		t.Fatalf("pid file holds %q, want %d", got, os.Getpid())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, control.PIDFileName+".tmp*")); len(left) > 0 {
		t.Fatalf("temporary pid files left: %v", left)
	}
}

// TestControlRefusesUntrustedDir: the CLI does not talk to a control
// socket in a dir another user could have made (symlinked, writable by
// others, owned by someone other than root or the caller): such a socket
// could answer "stopped" to a stop that stopped nothing.
func TestControlRefusesUntrustedDir(t *testing.T) {
	base := t.TempDir()
	ours := filepath.Join(base, "ours")
	if err := os.Mkdir(ours, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(ours, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	untrusted := []string{link, open}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		if err := os.Mkdir(theirs, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		untrusted = append(untrusted, theirs)
	}
	for _, dir := range untrusted {
		if _, err := control.Call(dir, "stop", time.Second); !errors.Is(err, control.ErrUnsafeRuntimeDir) {
			t.Errorf("control.Call(%q): %v, want control.ErrUnsafeRuntimeDir", dir, err)
		}
		if _, err := (&status.Reader{RuntimeDir: dir, Timeout: time.Second}).Read(); !errors.Is(err, control.ErrUnsafeRuntimeDir) {
			t.Errorf("status.Reader(%q).Read: %v, want control.ErrUnsafeRuntimeDir", dir, err)
		}
	}
	// A dir of ours with nothing listening: just no master.
	if _, err := control.Call(ours, "status", time.Second); !errors.Is(err, control.ErrNoMaster) {
		t.Errorf("Control on an empty dir of ours: %v, want control.ErrNoMaster", err)
	}
}
