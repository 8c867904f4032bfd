package affinity

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// StartPinned starts cmd with its CPU affinity already set to cpus, so the
// child runs only there from its first instruction and every thread it
// ever creates inherits the mask. Setting the affinity of the pid after
// Start would miss threads the Go runtime of the child has started by then.
//
// It works because a forked child inherits the mask of the thread that
// forked it: on a fresh goroutine locked to its OS thread, StartPinned
// saves that thread's mask, sets it to cpus with sched_setaffinity(2),
// calls cmd.Start and restores the mask. The Go runtime never clones new
// threads from a locked thread (it asks its template thread instead), so
// the temporary mask leaks to no other thread. If the mask cannot be
// restored, the thread is discarded rather than handed back to the
// scheduler, which is harmless to the child; note only that a child started with Pdeathsig would then get its
// signal, since Pdeathsig follows the forking thread.
//
// An empty cpus starts cmd unpinned, with the parent's own mask.
func StartPinned(cmd *exec.Cmd, cpus CPUSet) error {
	return StartPlaced(cmd, cpus, MemPolicy{})
}

// StartPlaced is StartPinned with a NUMA memory policy as well: the
// forking thread's set_mempolicy(2) policy is inherited by the child the
// same way its CPU mask is, so every page the child ever allocates,
// including its runtime's first ones, follows mem. The zero MemPolicy
// leaves the policy alone.
func StartPlaced(cmd *exec.Cmd, cpus CPUSet, mem MemPolicy) error {
	if cpus.IsEmpty() && mem.Mode == MemDefault {
		return cmd.Start()
	}
	var want *unix.CPUSet
	if !cpus.IsEmpty() {
		u, err := cpus.Unix()
		if err != nil {
			return err
		}
		want = &u
	}
	policy, err := mem.threadPolicy()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- startOnPlacedThread(cmd, cpus, want, mem, policy) }()
	return <-done
}

// startOnPlacedThread runs on its own goroutine; it returns with the OS
// thread unlocked only when the thread's mask and memory policy are back
// to what they were.
func startOnPlacedThread(cmd *exec.Cmd, cpus CPUSet, want *unix.CPUSet, mem MemPolicy, policy threadMemPolicy) error {
	runtime.LockOSThread()
	restore, err := placeThread(cmd, cpus, want, mem, policy)
	if err != nil {
		if restore() {
			runtime.UnlockOSThread()
		}
		return err
	}
	startErr := cmd.Start()
	if restore() {
		runtime.UnlockOSThread()
	} // else leave it locked: the runtime ends the thread when this goroutine returns.
	return startErr
}

// placeThread sets the calling thread's CPU mask (want, when not nil) and
// memory policy (unless mem is the default). restore puts back what it
// changed and reports whether it could.
func placeThread(cmd *exec.Cmd, cpus CPUSet, want *unix.CPUSet, mem MemPolicy, policy threadMemPolicy) (restore func() bool, err error) {
	var undo []func() error
	restore = func() bool {
		ok := true
		for i := len(undo) - 1; i >= 0; i-- {
			ok = undo[i]() == nil && ok
		}
		return ok
	}
	if want != nil {
		var saved unix.CPUSet
		if err := unix.SchedGetaffinity(0, &saved); err != nil {
			return restore, fmt.Errorf("could not read the forking thread's CPU affinity: %w", err)
		}
		if err := unix.SchedSetaffinity(0, want); err != nil {
			return restore, fmt.Errorf("could not pin the forking thread to CPUs %q for %s: %w", cpus, cmd.Path, err)
		}
		undo = append(undo, func() error { return unix.SchedSetaffinity(0, &saved) })
	}
	if mem.Mode != MemDefault {
		saved, err := getThreadMemPolicy()
		if err != nil {
			return restore, err
		}
		if err := setThreadMemPolicy(policy); err != nil {
			return restore, fmt.Errorf("could not set a %s memory policy on NUMA node %d for %s: %w", mem.Mode, mem.Node, cmd.Path, err)
		}
		undo = append(undo, func() error { return setThreadMemPolicy(saved) })
	}
	return restore, nil
}
