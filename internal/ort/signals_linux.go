//go:build linux && (amd64 || arm64)

package ort

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// KeepGoSignalHandlers saves the process's signal handlers and returns a
// function that puts back every one that was installed (not SIG_DFL or
// SIG_IGN) when saved. Call it before initialising the CUDA execution
// provider and call restore once the sessions are created and warmed up.
//
// Why: the CUDA libraries install handlers with sigaction(2) without
// SA_ONSTACK over the Go runtime's own, and the runtime then dies on the
// next such signal with "non-Go code set up signal handler without
// SA_ONSTACK flag" (onnxruntime_go issue #140); SIGTERM would also never
// reach signal.Notify, so the worker could not drain. signal.Notify after
// the fact does not help: the runtime believes its handler is still in
// place and does not reinstall it. The kernel's sigaction records are
// saved and restored as they are, with rt_sigaction(2), so what is put
// back is exactly what the Go runtime installed.
func KeepGoSignalHandlers() (restore func()) {
	var saved [numSignals + 1]kernelSigaction
	var installed [numSignals + 1]bool
	for sig := 1; sig <= numSignals; sig++ {
		if rtSigaction(sig, nil, &saved[sig]) == nil {
			installed[sig] = saved[sig].handler != sigDFL && saved[sig].handler != sigIGN
		}
	}
	return func() {
		for sig := 1; sig <= numSignals; sig++ {
			var now kernelSigaction
			if installed[sig] && rtSigaction(sig, nil, &now) == nil && now != saved[sig] {
				_ = rtSigaction(sig, &saved[sig], nil)
			}
		}
	}
}

// numSignals is the highest signal number on Linux (SIGRTMAX).
const numSignals = 64

const (
	sigDFL = 0
	sigIGN = 1
)

// kernelSigaction is struct sigaction as rt_sigaction(2) reads and writes
// it on amd64 and arm64 (the Go runtime's sigactiont).
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

func rtSigaction(sig int, act, old *kernelSigaction) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), unsafe.Sizeof(uint64(0)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
