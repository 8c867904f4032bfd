// Package modelid names a model file by its content: the SHA-256 of its
// bytes. A model's identity decides whether a reload or a load replaces
// its workers, and is part of every response cache key (local and
// Redis), so that answers of one set of weights are never served for
// another. A file's size and modification time do not tell its contents
// apart: a retrained file copied with its times kept (cp -p, rsync -t,
// images with normalised timestamps) has the old ones, and two hosts may
// hold different weights at the same path with the same size and times.
//
// Hashing reads the whole file, so a Cache remembers each path's
// identity under the file's Stamp (device, inode, size, modification and
// change times) and reads it again only when the stamp changes: the
// change time (ctime) is set by the kernel on every write, rename and
// utimes, and cannot be set back by a user, so a file rewritten with its
// old size and mtime still gets a new stamp.
package modelid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// Prefix starts every identity, naming the hash.
const Prefix = "sha256:"

// Stamp is what tells a file's versions apart without reading it.
type Stamp struct {
	Dev, Ino uint64
	Size     int64
	Mtime    int64 // nanoseconds since the epoch
	Ctime    int64 // nanoseconds since the epoch
}

// StampOf is fi's stamp.
func StampOf(fi os.FileInfo) Stamp {
	s := Stamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.Dev, s.Ino = uint64(st.Dev), st.Ino
		s.Ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return s
}

// attempts bounds how often Of rereads a file that changes while it is
// hashed before it gives up.
const attempts = 3

// Hash reads the file at path and returns its identity and the stamp of
// the bytes it hashed: the file's stamp before and after the read, which
// must agree, else the file was being written and is read again (up to
// attempts times).
func Hash(path string) (string, Stamp, error) {
	for range attempts {
		id, st, same, err := hashOnce(path)
		if err != nil || same {
			return id, st, err
		}
	}
	return "", Stamp{}, fmt.Errorf("model file %q changed while it was read, %d times: wait for whatever writes it to finish (or replace it with a rename), then load it again", path, attempts)
}

// hashOnce hashes path once; same says whether its stamp stayed the same
// during the read.
func hashOnce(path string) (string, Stamp, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", Stamp{}, false, fmt.Errorf("could not read model file to hash it: %w", err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return "", Stamp{}, false, fmt.Errorf("could not stat model file %q: %w", path, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", Stamp{}, false, fmt.Errorf("could not read model file %q to hash it: %w", path, err)
	}
	after, err := os.Stat(path) // by path: a rename over it is a change too
	if err != nil {
		return "", Stamp{}, false, fmt.Errorf("could not stat model file %q: %w", path, err)
	}
	st := StampOf(before)
	return Prefix + hex.EncodeToString(h.Sum(nil)), st, StampOf(after) == st, nil
}

// Cache remembers the identities of model files by path and stamp. Its
// zero value is empty and ready; it is safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	byPath map[string]entry
	hashed int // files hashed by Of, for tests
}

type entry struct {
	stamp Stamp
	id    string
}

// Of is the identity of the file at path: remembered while its stamp
// stays the same, else read and hashed (Hash).
func (c *Cache) Of(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("could not stat model file: %w", err)
	}
	st := StampOf(fi)
	c.mu.Lock()
	e, ok := c.byPath[path]
	c.mu.Unlock()
	if ok && e.stamp == st {
		return e.id, nil
	}
	id, st, err := Hash(path)
	if err != nil {
		return "", err
	}
	c.Remember(path, st, id)
	c.mu.Lock()
	c.hashed++
	c.mu.Unlock()
	return id, nil
}

// Known is the identity Of last found (or Remember was told) for path,
// without looking at the file: "" when it has none. The master's poison
// quarantine keys requests with it on the request path, where a model
// file is neither stat'ed nor read again, and the identity is the one
// the workers were last started with.
func (c *Cache) Known(path string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byPath[path].id
}

// Remember records that the file at path, at stamp st, has identity id:
// what a worker is told by the master, so that it hashes the file again
// only when it has changed since.
func (c *Cache) Remember(path string, st Stamp, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPath == nil {
		c.byPath = map[string]entry{}
	}
	c.byPath[path] = entry{stamp: st, id: id}
}

// Forget drops the paths not in keep, so that a long-running master does
// not remember every model file it ever served.
func (c *Cache) Forget(keep func(path string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.byPath {
		if !keep(p) {
			delete(c.byPath, p)
		}
	}
}
