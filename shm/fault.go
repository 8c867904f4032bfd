package shm

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrFault: touching the mapped board faulted (SIGBUS): its file was
// truncated (or otherwise shrunk) under the mapping. Whoever can write the
// file can do that, and the master gives the file to the workers' user.
var ErrFault = errors.New("scoreboard mapping faulted: the file was truncated under it")

// Guard runs fn, which reads or writes mapped boards, with memory faults
// on the calling goroutine turned into a panic (debug.SetPanicOnFault)
// that Guard recovers and returns as an error wrapping ErrFault. Without
// it a fault kills the whole process. Any other panic goes on up: Guard
// hides faults of the mapping, not bugs. The setting is per goroutine, so
// every goroutine that touches a board someone else can truncate must go
// through Guard; it costs a deferred call, so it wraps reads and rare
// writes, not a worker's per-request counters.
//
// Why a guard, and not a sealed memfd: a memfd sealed with F_SEAL_SHRINK
// cannot be truncated at all, and passed to workers as an inherited fd it
// needs no file anyone else can open.
// But `supervisor status` reads the board from another process, by path,
// precisely so that it answers when the master does not; a memfd has no
// path but /proc/<master>/fd/N, which needs ptrace access to the master,
// and upgrades would have to hand it on. A fault guard keeps the file, the
// CLI and the upgrade story as they are, costs one deferred call per
// master-side access (never per request), and also covers the CLI's
// mapping, which a seal on the master's fd would not protect.
func Guard(fn func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		// A fault at an address (SIGBUS, SIGSEGV past the end) is a
		// runtime.Error with Addr; a nil dereference is not.
		if f, ok := r.(interface{ Addr() uintptr }); ok {
			err = fmt.Errorf("%w (fault at address %#x)", ErrFault, f.Addr())
			return
		}
		panic(r)
	}()
	fn()
	return nil
}
