package workers

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestEngineCacheNeverFollowsALink: the master makes the engine cache's
// missing parents the workers' too, so a worker can later swap the cache
// directory, or a parent, for a symbolic link to a directory of root's. The
// master, run again (a restart, a reload), must not give the link's
// target to the workers' user: root's chown follows links, and a worker
// would own, say, /etc. The cache is refused instead, and the target keeps
// its owner.
func TestEngineCacheNeverFollowsALink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only a root master gives directories to the workers' user")
	}
	state := t.TempDir()
	victim := filepath.Join(state, "roots")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	nobody := &Credentials{uid: 65534, gid: 65534}
	workers := filepath.Join(state, "workers")
	if err := nobody.mkdirAll(filepath.Join(workers, "engines")); err != nil {
		t.Fatal(err)
	}
	// What a worker can do in its own directory: the cache, then a parent
	// on the way to a missing cache, become links to root's directory.
	cases := map[string]string{"cache": filepath.Join(workers, "engines"), "parent": filepath.Join(workers, "up", "engines")}
	for name, dir := range cases {
		link := filepath.Dir(dir)
		if name == "cache" {
			link = dir
		}
		if err := os.RemoveAll(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		if err := nobody.mkdirAll(dir); err == nil {
			t.Errorf("%s: the cache %q through a link was accepted; want it refused", name, dir)
		}
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(victim)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s: root's %q, reached through a link, is now owned by %d:%d", name, victim, st.Uid, st.Gid)
		}
		_ = os.RemoveAll(filepath.Join(victim, "engines"))
	}
}
