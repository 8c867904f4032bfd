package nicethread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Nice is how much nicer than the worker a large decode runs (at
// most nice 19). A large decode is
// CPU work for seconds that a client may ask for legally (an image of
// max_pixels); at the worker's own priority it takes a whole CPU from
// every other request of the host (the MLP client's p99 was 6–14× steady
// under png8-bomb with the cost-aware gate alone). At nice 10 (CFS weight
// 110 against 1024) it yields the CPU to the work of ordinary priority
// while that is runnable and still gets about a tenth of a CPU beside
// it, so large images are slowed under load, never stopped.
const Nice = 10

// Run runs fn on a thread of its own, Nice nicer than the
// worker, and returns its
// result. The thread is locked to the goroutine and, its priority being
// one an unprivileged process cannot raise back, it ends with the
// goroutine (exiting locked terminates it) rather than return to the
// scheduler's pool; the one thread the runtime cannot end, the main
// one, it parks for ever instead, so it runs nothing niced either. A thread costs tens of microseconds, nothing beside
// a decode of a large image. If the priority cannot be set, fn runs at
// the worker's.
func Run(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		tid := unix.Gettid()
		// The raw getpriority answers 20 − nice.
		if p, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err == nil {
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, min(20-p+Nice, 19))
		}
		done <- fn()
	}()
	return <-done
}
