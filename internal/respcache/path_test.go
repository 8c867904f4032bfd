package respcache

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/supervisor-dev/supervisor/shm"
)

func TestPathForChangesWithSize(t *testing.T) {
	if PathFor(1, "m", 1<<20) == PathFor(1, "m", 2<<20) || PathFor(1, "m", 1<<20) == PathFor(2, "m", 1<<20) {
		t.Fatal("a segment path does not change with the master or the size")
	}
}

// TestRemoveStale removes a dead master's segment and keeps a live one's.
func TestRemoveStale(t *testing.T) {
	if _, err := os.Stat(shm.Dir); err != nil {
		t.Skipf("no %s: %v", shm.Dir, err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	stale := PathFor(dead.Process.Pid, "test-stale", MinBytes)
	live := PathFor(os.Getppid(), "test-live", MinBytes)
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Skipf("cannot write %s: %v", filepath.Dir(p), err)
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	RemoveStale()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a dead master's segment %s survived: %v", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live master's segment %s was removed: %v", live, err)
	}
}
