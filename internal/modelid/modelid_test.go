package modelid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// write writes b to path and sets its modification time to mtime.
func write(t *testing.T, path string, b []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestSameSizeAndMtimeOtherContent: a file rewritten in place with the
// same size and modification time (cp -p of a retrained model) has
// another identity, and the cache hashes it again rather than answering
// the old one.
func TestSameSizeAndMtimeOtherContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.onnx")
	mtime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	write(t, path, []byte("weights A"), mtime)
	var c Cache
	a, err := c.Of(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, Prefix) || len(a) != len(Prefix)+64 {
		t.Fatalf("identity %q, want sha256:<64 hex digits>", a)
	}
	write(t, path, []byte("weights B"), mtime)
	fi, _ := os.Stat(path)
	if fi.Size() != 9 || !fi.ModTime().Equal(mtime) {
		t.Fatalf("the rewrite has size %d, mtime %s; the test needs 9, %s", fi.Size(), fi.ModTime(), mtime)
	}
	if known := c.Known(path); known != a {
		t.Fatalf("Known before Of looked again: %q, want A's %s (Known reads nothing)", known, a)
	}
	b, err := c.Of(path)
	if err != nil {
		t.Fatal(err)
	}
	if known := c.Known(path); known != b || c.Known(path+".other") != "" {
		t.Fatalf("Known after Of: %q (and %q for a path never seen), want %s (and \"\")", known, c.Known(path+".other"), b)
	}
	if a == b {
		t.Fatalf("same size and mtime, other content: both %s", a)
	}
	if c.hashed != 2 {
		t.Fatalf("hashed %d times, want 2", c.hashed)
	}
	// Back to A's bytes: A's identity, whatever the times.
	write(t, path, []byte("weights A"), mtime.Add(time.Hour))
	if again, _ := c.Of(path); again != a {
		t.Fatalf("A's bytes again: %s, want %s", again, a)
	}
}

// TestUnchangedFileIsHashedOnce: while a file's stamp stays the same its
// identity is remembered, not read again; another path with the same
// bytes has the same identity (content, not place).
func TestUnchangedFileIsHashedOnce(t *testing.T) {
	dir := t.TempDir()
	p, q := filepath.Join(dir, "a.onnx"), filepath.Join(dir, "b.onnx")
	now := time.Now()
	write(t, p, []byte("same"), now)
	write(t, q, []byte("same"), now.Add(-time.Hour))
	var c Cache
	first, err := c.Of(p)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if id, err := c.Of(p); err != nil || id != first {
			t.Fatalf("Of = %q, %v; want %q", id, err, first)
		}
	}
	if c.hashed != 1 {
		t.Fatalf("an unchanged file was hashed %d times, want 1", c.hashed)
	}
	if id, _ := c.Of(q); id != first {
		t.Fatalf("the same bytes elsewhere: %s, want %s", id, first)
	}
	c.Forget(func(path string) bool { return path == q })
	if _, ok := c.byPath[p]; ok {
		t.Fatal("Forget kept a path it was told to drop")
	}
}

// TestRenamedOverIsRehashed: a file replaced by a rename (a new inode)
// with the old size and times is hashed again.
func TestRenamedOverIsRehashed(t *testing.T) {
	dir := t.TempDir()
	path, tmp := filepath.Join(dir, "m.onnx"), filepath.Join(dir, "m.onnx.tmp")
	mtime := time.Now().Add(-time.Hour)
	write(t, path, []byte("one"), mtime)
	var c Cache
	a, _ := c.Of(path)
	write(t, tmp, []byte("two"), mtime)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Of(path); b == a {
		t.Fatal("a file renamed over the model kept its identity")
	}
}

// TestMissingFile: a file that is not there is an error naming it.
func TestMissingFile(t *testing.T) {
	var c Cache
	path := filepath.Join(t.TempDir(), "gone.onnx")
	if _, err := c.Of(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Of(missing) = %v, want an error naming %s", err, path)
	}
}
