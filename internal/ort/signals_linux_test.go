//go:build linux && (amd64 || arm64)

package ort

import (
	"syscall"
	"testing"
)

// TestKeepGoSignalHandlers replaces the Go runtime's SIGUSR1 and SIGWINCH
// handlers behind its back, as the CUDA libraries do, and checks that
// restore puts the runtime's back exactly. (SIG_IGN stands in for a
// foreign handler: it is harmless should one of these signals arrive.)
func TestKeepGoSignalHandlers(t *testing.T) {
	sigs := []int{int(syscall.SIGUSR1), int(syscall.SIGWINCH)}
	restore := KeepGoSignalHandlers()
	saved := map[int]kernelSigaction{}
	for _, sig := range sigs {
		var old kernelSigaction
		if err := rtSigaction(sig, &kernelSigaction{handler: sigIGN}, &old); err != nil {
			t.Fatal(err)
		}
		if old.handler == sigDFL || old.handler == sigIGN {
			t.Fatalf("signal %d had no Go handler to begin with (%#x)", sig, old.handler)
		}
		saved[sig] = old
	}
	restore()
	for _, sig := range sigs {
		var now kernelSigaction
		if err := rtSigaction(sig, nil, &now); err != nil {
			t.Fatal(err)
		}
		if now != saved[sig] {
			t.Errorf("signal %d: handler %+v after restore, want the Go runtime's %+v", sig, now, saved[sig])
		}
	}
}
