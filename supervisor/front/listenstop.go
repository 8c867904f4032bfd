package front

import (
	"fmt"
	"syscall"
)

// StopListening makes the kernel refuse new connections to the public
// socket at once, for a stop that hands over to no one. Closing the
// listener is not enough: tableflip keeps another descriptor of the same
// socket open for the next upgrade until the master exits, so the socket
// went on listening through the whole drain, and a client that connected
// meanwhile (a new one, or one told to reconnect by "Connection: close")
// sent its request into the accept queue and was reset when the master
// exited, instead of being refused before it sent anything.
// shutdown(2) of a listening socket acts on the socket, whatever holds
// it: it stops listening and resets what waits in the accept queue. After
// an upgrade the socket is the new master's: never call this then.
func (l *capListener) StopListening() error {
	sc, ok := l.Listener.Listener.(syscall.Conn)
	if !ok {
		return nil // not a socket (test listeners)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("stop listening on %s: %w", l.Addr(), err)
	}
	l.stopped.Store(true)
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), syscall.SHUT_RD) }); err != nil {
		return fmt.Errorf("stop listening on %s: %w", l.Addr(), err)
	}
	if serr != nil {
		return fmt.Errorf("stop listening on %s: shutdown: %w", l.Addr(), serr)
	}
	return nil
}
