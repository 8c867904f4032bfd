package workers

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/quarantine"
)

// CrashLog records the last unexpected exits of the workers of one role
// (the master keeps one for infer workers, one for prep workers), for the
// front's poison quarantine (supervisor/front poison.go): each with its
// worker's socket, which the request that died with it names (the lb's
// BackendError), whether it was a crash (a fault signal, or an exit
// status of its own) rather than a kill from outside (SIGKILL from the
// OOM killer, the hang detection or an operator; SIGTERM), and what the
// worker was at work on when it died (its scoreboard record's work
// record, read once the process was reaped, before the record is
// released). A request counts against its body only when its worker
// crashed and it was at work then.
//
// The hang detection's kill is no crash on purpose: heartbeats come from
// a ticker goroutine of their own, which a request's run does not stop (a
// run that never returns is stopped at max_run_time, a strike of its
// own), so a worker that stops beating is wedged as a whole (a driver, a
// SIGSTOP, swapping), and every request in flight is innocent. Counting
// it quarantined a load test's one body after two such hangs (TestChaos).
type CrashLog struct {
	mu    sync.Mutex
	exits [crashLogSize]quarantine.Exit
	next  int
	more  chan struct{} // closed at the next exit
	// then, if set, is told of each crash, after it is recorded: the
	// front strikes the abandoned requests at work then.
	then func(quarantine.Exit)
}

// crashLogSize is how many exits a CrashLog keeps: a request looks for
// its worker's within a second of the exit, and no pool restarts that
// many workers a second.
const crashLogSize = 64

func NewCrashLog(then func(quarantine.Exit)) *CrashLog {
	return &CrashLog{more: make(chan struct{}), then: then}
}

// Record notes a worker's unexpected exit: p, reaped.
func (c *CrashLog) Record(p *Process) {
	e := quarantine.Exit{At: time.Now(), Socket: p.spec.Socket, Crashed: isCrash(p.err), Work: p.atWork, Read: p.atWorkRead}
	c.mu.Lock()
	c.exits[c.next] = e
	c.next = (c.next + 1) % crashLogSize
	close(c.more)
	c.more = make(chan struct{})
	c.mu.Unlock()
	if e.Crashed && c.then != nil {
		c.then(e)
	}
}

// ExitOf returns the exit of the worker on socket, waiting up to wait
// for it: a request sees its worker's connection break before the master
// reaps the worker.
func (c *CrashLog) ExitOf(socket string, wait time.Duration) (quarantine.Exit, bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		c.mu.Lock()
		more := c.more
		for _, e := range c.exits {
			if e.Socket == socket && socket != "" {
				c.mu.Unlock()
				return e, true
			}
		}
		c.mu.Unlock()
		select {
		case <-more:
		case <-t.C:
			return quarantine.Exit{}, false
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
