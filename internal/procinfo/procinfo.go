// Package procinfo is the supervisor's one reader of /proc: what the
// master, `supervisor status` and the tests need to know about a process
// (resident memory, CPU time, state, ids, allowed CPUs), read through
// prometheus/procfs, which parses /proc/<pid>/stat and /proc/<pid>/status
// (and is fuzzed and maintained upstream) so that no caller hand-parses
// them.
//
// Every function takes a root ("" = /proc) like procfs.NewFS, so tests
// can read a fake tree. Reads are point-in-time: a process can exit
// between two calls, and a pid can be reused; callers that must not act
// on a stranger (signals) hold the process handle instead.
package procinfo

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/prometheus/procfs"
)

// Process is one process as read from /proc/<pid>/stat and status.
type Process struct {
	PID int
	// RSS is the resident set size in bytes (status VmRSS).
	RSS uint64
	// PeakRSS is the largest RSS so far, in bytes (status VmHWM).
	PeakRSS uint64
	// CPUSeconds is the user plus system CPU time used so far (stat).
	CPUSeconds float64
	// State is the one-letter state of stat: R, S, D, Z (zombie), X ...
	State string
	// Start is when it started, in clock ticks after boot (stat): with PID,
	// it tells a process from a later one that reuses its pid.
	Start uint64
	// UIDs and GIDs are real, effective, saved and filesystem ids (status).
	UIDs, GIDs [4]uint64
	// CPUs are the CPUs it may run on (status Cpus_allowed_list).
	CPUs []int
}

// ErrGone: the process does not exist (any more) under the root read.
var ErrGone = errors.New("no such process")

// Read reads pid's stat and status under root ("" = /proc). A process
// that does not exist gives an error wrapping ErrGone.
func Read(root string, pid int) (Process, error) {
	p, err := proc(root, pid)
	if err != nil {
		return Process{}, err
	}
	stat, err := p.Stat()
	if err != nil {
		return Process{}, readError(pid, "stat", err)
	}
	st, err := p.NewStatus()
	if err != nil {
		return Process{}, readError(pid, "status", err)
	}
	out := Process{PID: pid, RSS: st.VmRSS, PeakRSS: st.VmHWM, CPUSeconds: stat.CPUTime(), State: stat.State, Start: stat.Starttime, UIDs: st.UIDs, GIDs: st.GIDs}
	for _, c := range st.CpusAllowedList {
		out.CPUs = append(out.CPUs, int(c))
	}
	return out, nil
}

// Exited reports whether pid has exited: gone, or a zombie (or dead)
// entry its parent has yet to reap.
func Exited(root string, pid int) bool {
	p, err := proc(root, pid)
	if err != nil {
		return true
	}
	stat, err := p.Stat()
	return err != nil || stat.State == "Z" || stat.State == "X"
}

// Threads lists the thread ids of pid (/proc/<pid>/task) with each one's
// allowed CPUs; a thread that exits while it is read is left out.
func Threads(root string, pid int) (map[int][]int, error) {
	f, err := procFS(root)
	if err != nil {
		return nil, err
	}
	threads, err := f.AllThreads(pid)
	if err != nil {
		return nil, readError(pid, "task", err)
	}
	out := make(map[int][]int, len(threads))
	for _, t := range threads {
		st, err := t.NewStatus()
		if err != nil {
			continue
		}
		cpus := make([]int, 0, len(st.CpusAllowedList))
		for _, c := range st.CpusAllowedList {
			cpus = append(cpus, int(c))
		}
		out[t.PID] = cpus
	}
	return out, nil
}

func procFS(root string) (procfs.FS, error) {
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	f, err := procfs.NewFS(root)
	if err != nil {
		return procfs.FS{}, fmt.Errorf("could not open %q: %w", root, err)
	}
	return f, nil
}

func proc(root string, pid int) (procfs.Proc, error) {
	f, err := procFS(root)
	if err != nil {
		return procfs.Proc{}, err
	}
	p, err := f.Proc(pid)
	if err != nil {
		return procfs.Proc{}, readError(pid, "", err)
	}
	return p, nil
}

// readError says which file of pid could not be read; a missing one means
// the process is gone (ErrGone).
func readError(pid int, file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return fmt.Errorf("could not read /proc/%d/%s: %w", pid, file, err)
}

// CPUIdle returns, per CPU id, the seconds each CPU has been idle (idle
// plus iowait) since boot, from /proc/stat under root ("" = /proc). The
// difference between two reads, over the time between them, is how much
// of each CPU was free.
func CPUIdle(root string) (map[int]float64, error) {
	f, err := procFS(root)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("could not read %q: %w", filepath.Join(root, "stat"), err)
	}
	out := make(map[int]float64, len(st.CPU))
	for id, c := range st.CPU {
		out[int(id)] = c.Idle + c.Iowait
	}
	return out, nil
}
