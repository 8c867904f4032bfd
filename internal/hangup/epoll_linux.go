package hangup

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// hangupEvents are what a registration waits for: the peer's FIN, a
// hang-up, an error; once (EPOLLONESHOT), then the socket is disarmed
// until deleted. Nothing for reading: the handler's own reads and the Go
// runtime's poller are untouched, and pending bytes wake nothing.
const hangupEvents = unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR | unix.EPOLLONESHOT

// epoll is the Watcher's epoll instance.
type epoll struct{ fd int }

func (ep *epoll) open() error {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("%w: epoll_create1: %w", ErrUnwatchable, os.NewSyscallError("epoll_create1", err))
	}
	ep.fd = fd
	return nil
}

// add registers raw's socket under token, inside Control so that the
// descriptor is the connection's for the whole call.
func (ep *epoll) add(raw syscall.RawConn, token uint64) error {
	// The 64-bit data word is Fd and Pad on every architecture.
	ev := unix.EpollEvent{Events: hangupEvents, Fd: int32(uint32(token)), Pad: int32(token >> 32)}
	var ctlErr error
	if err := raw.Control(func(fd uintptr) {
		ctlErr = unix.EpollCtl(ep.fd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrUnwatchable, err)
	}
	if ctlErr != nil {
		return fmt.Errorf("%w: epoll_ctl add: %w", ErrUnwatchable, ctlErr)
	}
	return nil
}

// del deregisters raw's socket, if its connection is still open; a closed one was
// dropped by the kernel with the socket.
func (ep *epoll) del(raw syscall.RawConn) {
	_ = raw.Control(func(fd uintptr) {
		_ = unix.EpollCtl(ep.fd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
}

// wait delivers events to fire for ever.
func (ep *epoll) wait(fire func(token uint64)) {
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(ep.fd, events, -1)
		if err != nil {
			continue // EINTR; nothing else can fail on a valid instance
		}
		for i := range events[:n] {
			fire(uint64(uint32(events[i].Fd)) | uint64(uint32(events[i].Pad))<<32)
		}
	}
}
