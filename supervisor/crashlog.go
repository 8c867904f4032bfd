package supervisor

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// crashLog records when a worker of one role (the master keeps one for
// infer workers, one for prep workers) last crashed on its own, for the
// front's poison quarantine (supervisor/front poison.go): a request whose
// worker exited counts against its body only when the exit was a crash
// (a fault signal, or an exit status of its own), never a kill from
// outside (SIGKILL from the OOM killer, the hang detection or an
// operator; SIGTERM): the requests in flight then are not what killed it.
//
// The hang detection's kill is no strike on purpose: heartbeats come from
// a ticker goroutine of their own, which a request's run does not stop (a
// run that never returns is stopped at max_run_time, a strike of its
// own), so a worker that stops beating is wedged as a whole (a driver, a
// SIGSTOP, swapping), and every request in flight is innocent. Counting
// it quarantined a load test's one body after two such hangs (TestChaos).
type crashLog struct {
	mu   sync.Mutex
	last time.Time
	next chan struct{} // closed at the next crash
	// then, if set, is told of each crash, after it is recorded: the
	// front strikes the abandoned requests in flight then.
	then func(at time.Time)
}

func newCrashLog(then func(at time.Time)) *crashLog {
	return &crashLog{next: make(chan struct{}), then: then}
}

// record notes a worker's unexpected exit, err as its Wait gave it.
func (c *crashLog) record(err error) {
	if !isCrash(err) {
		return
	}
	c.mu.Lock()
	at := time.Now()
	c.last = at
	close(c.next)
	c.next = make(chan struct{})
	c.mu.Unlock()
	if c.then != nil {
		c.then(at)
	}
}

// crashedSince says whether a worker crashed at or after since,
// waiting up to wait for one: a request sees its worker's connection break
// before the master reaps the worker.
func (c *crashLog) crashedSince(since time.Time, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		c.mu.Lock()
		last, next := c.last, c.next
		c.mu.Unlock()
		if !last.Before(since) {
			return true
		}
		select {
		case <-next:
		case <-t.C:
			return false
		}
	}
}

// isCrash says whether a process's exit (its Wait error) was its own
// fault: a fault signal (SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT,
// SIGTRAP, SIGSYS) or a non-zero exit status (the Go runtime exits 2 on a
// fault in ONNX Runtime's C++), not a signal sent from outside.
func isCrash(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok {
		return false
	}
	if ws.Signaled() {
		switch ws.Signal() {
		case syscall.SIGSEGV, syscall.SIGFPE, syscall.SIGBUS, syscall.SIGILL, syscall.SIGABRT, syscall.SIGTRAP, syscall.SIGSYS:
			return true
		}
		return false
	}
	return ws.Exited() && ws.ExitStatus() != 0
}
