package hangup

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestEpollIsCloseOnExec: the Watcher's epoll descriptor is not inherited
// by the workers the master execs, nor by a tableflip heir, which start
// their own: an inherited one would be a descriptor the child never
// closes, holding the parent's epoll instance and its registrations.
func TestEpollIsCloseOnExec(t *testing.T) {
	w := watcher(t)
	flags, err := unix.FcntlInt(uintptr(w.ep.fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatalf("fcntl F_GETFD on the epoll descriptor %d: %v", w.ep.fd, err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("the epoll descriptor %d has flags %#x, want FD_CLOEXEC", w.ep.fd, flags)
	}
}
