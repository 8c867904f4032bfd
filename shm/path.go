package shm

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"
)

// Dir is where boards live: a tmpfs, so the board is memory, never disk.
const Dir = "/dev/shm"

// instancePrefix names every board of the instance whose runtime directory
// is runtimeDir, after a hash of the directory's absolute path, so the
// master and the CLI agree on it without talking.
func instancePrefix(runtimeDir string) string {
	if abs, err := filepath.Abs(runtimeDir); err == nil {
		runtimeDir = abs
	}
	h := fnv.New64a()
	h.Write([]byte(runtimeDir))
	return filepath.Join(Dir, fmt.Sprintf("supervisor-%016x", h.Sum64()))
}

// DefaultPath returns the single board path of an instance, for users of
// one board per instance.
func DefaultPath(runtimeDir string) string {
	return instancePrefix(runtimeDir) + ".scoreboard"
}

// PathFor returns the board of one master of the instance whose runtime
// directory is runtimeDir. Each master has its own board: during an
// upgrade the old and the new master run at once, and the new one must not
// replace the board the old one's workers still write.
func PathFor(runtimeDir string, masterPID int) string {
	return instancePrefix(runtimeDir) + "." + strconv.Itoa(masterPID) + ".scoreboard"
}

// Boards lists the per-master boards of the instance with their master
// pids, dead masters' leftovers included (see Header and processExists).
func Boards(runtimeDir string) map[int]string {
	prefix := instancePrefix(runtimeDir) + "."
	paths, _ := filepath.Glob(prefix + "*.scoreboard")
	out := map[int]string{}
	for _, p := range paths {
		pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, prefix), ".scoreboard"))
		if err == nil && pid > 0 {
			out[pid] = p
		}
	}
	return out
}

// ProcessExists reports whether pid names a process (kill(pid, 0) does not
// fail with ESRCH): how readers tell a dead master's board or a dead
// worker's slot.
func ProcessExists(pid int) bool { return pid > 0 && processExists(pid) }
