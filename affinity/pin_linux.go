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
	if cpus.IsEmpty() {
		return cmd.Start()
	}
	want, err := cpus.Unix()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- startOnPinnedThread(cmd, cpus, &want) }()
	return <-done
}

// startOnPinnedThread runs on its own goroutine; it returns with the OS
// thread unlocked only when the thread's mask is back to what it was.
func startOnPinnedThread(cmd *exec.Cmd, cpus CPUSet, want *unix.CPUSet) error {
	runtime.LockOSThread()
	var saved unix.CPUSet
	if err := unix.SchedGetaffinity(0, &saved); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("could not read the forking thread's CPU affinity: %w", err)
	}
	if err := unix.SchedSetaffinity(0, want); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("could not pin the forking thread to CPUs %q for %s: %w", cpus, cmd.Path, err)
	}
	startErr := cmd.Start()
	if unix.SchedSetaffinity(0, &saved) == nil {
		runtime.UnlockOSThread()
	} // else leave it locked: the runtime ends the thread when this goroutine returns.
	return startErr
}
