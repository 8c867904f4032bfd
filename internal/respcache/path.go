package respcache

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/supervisor-dev/supervisor/shm"
)

// filePrefix starts every segment's name in shm.Dir.
const filePrefix = "supervisor-respcache."

// PathFor is the segment of model, of maxBytes, for the master masterPID:
// per master, so that during an upgrade the new master's caches never
// replace the old one's under its workers; and per size, so that a reload
// that resizes the cache changes the path in the prep workers' spec, which
// replaces them, instead of leaving them on the old, unlinked segment.
func PathFor(masterPID int, model string, maxBytes int64) string {
	return filepath.Join(shm.Dir, filePrefix+strconv.Itoa(masterPID)+"."+model+"."+strconv.FormatInt(maxBytes, 10))
}

// RemoveStale removes the segments of masters that no longer run (a
// SIGKILL skips their cleanup).
func RemoveStale() {
	paths, _ := filepath.Glob(filepath.Join(shm.Dir, filePrefix+"*"))
	for _, p := range paths {
		rest := strings.TrimPrefix(filepath.Base(p), filePrefix)
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '.'), 0)])
		if err == nil && pid != os.Getpid() && !shm.ProcessExists(pid) {
			_ = os.Remove(p)
		}
	}
}
