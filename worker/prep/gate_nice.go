package prep

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// largeNice is the niceness a large decode runs at. A large decode is
// CPU work for seconds that a client may ask for legally (an image of
// max_pixels); at the worker's own priority it takes a whole CPU from
// every other request of the host (the MLP client's p99 was 6–14× steady
// under png8-bomb with the cost-aware gate alone). At nice 10 (CFS weight
// 110 against 1024) it yields the CPU to the work of ordinary priority
// while that is runnable and still gets about a tenth of a CPU beside
// it, so large images are slowed under load, never stopped.
const largeNice = 10

// runNiced runs fn on a thread of its own at largeNice and returns its
// result. The thread is locked to the goroutine and, its priority being
// one an unprivileged process cannot raise back, it ends with the
// goroutine (exiting locked terminates it) rather than return to the
// scheduler's pool. A thread costs tens of microseconds, nothing beside
// a decode of a large image. If the priority cannot be set, fn runs at
// the worker's.
func runNiced(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), largeNice)
		done <- fn()
	}()
	return <-done
}
