// Package listenstop stops a listening socket for good, for a master
// stop that hands over to no one. Closing a listener is not enough:
// tableflip keeps another descriptor of the same socket open for the next
// upgrade until the master exits, so the socket goes on listening through
// the whole drain, and a client that connects meanwhile (a new one, or one
// told to reconnect) waits in the accept queue and is reset when the
// master exits, instead of being refused before it sends anything.
// shutdown(2) of a listening socket acts on the socket, whatever holds
// it: it stops listening and resets what waits in the accept queue.
//
// Pitfall for the caller: after an upgrade the socket is the new
// master's; never stop it then.
package listenstop

import (
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
)

// Shutdown makes the kernel refuse new connections to ln's socket at
// once. A listener that is not a socket (a test's) is left alone.
func Shutdown(ln net.Listener) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("stop listening on %s: %w", ln.Addr(), err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), syscall.SHUT_RD) }); err != nil {
		return fmt.Errorf("stop listening on %s: %w", ln.Addr(), err)
	}
	if serr != nil {
		return fmt.Errorf("stop listening on %s: shutdown: %w", ln.Addr(), serr)
	}
	return nil
}

// Listener is a listener whose socket StopListening shuts down; once it is,
// Accept's error is net.ErrClosed, the usual end of a server (fasthttp and
// grpc-go log anything else as a failure).
type Listener struct {
	net.Listener
	stopped atomic.Bool
}

// Wrap returns ln as a Listener.
func Wrap(ln net.Listener) *Listener { return &Listener{Listener: ln} }

// Accept is the wrapped listener's, with net.ErrClosed after StopListening.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && l.stopped.Load() {
		return nil, net.ErrClosed
	}
	return c, err
}

// StopListening shuts the socket down (Shutdown): new connections are
// refused. A nil Listener (a listener turned off) does nothing.
func (l *Listener) StopListening() error {
	if l == nil {
		return nil
	}
	l.stopped.Store(true)
	return Shutdown(l.Listener)
}
