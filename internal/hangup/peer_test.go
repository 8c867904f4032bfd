package hangup

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// PeerClosed sees a peer that hung up cleanly (FIN: a prep worker's client
// at its deadline) and one that reset the connection (RST: a process
// killed with bytes it had not read, here SO_LINGER 0), at the first ask
// once the kernel has it (poll(2), which consumes nothing, says when); a
// silent peer still waits. The first peek after a reset fails with
// ECONNRESET instead of reading end of file.
func TestPeerClosed(t *testing.T) {
	s := dialPair(t, "tcp").server
	if PeerClosed(s) {
		t.Fatal("an open, silent connection was taken as closed")
	}
	for name, hangUp := range map[string]func(*net.TCPConn) error{
		"FIN": func(c *net.TCPConn) error { return c.Close() },
		"RST": func(c *net.TCPConn) error {
			if err := c.SetLinger(0); err != nil {
				return err
			}
			return c.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := dialPair(t, "tcp")
			s := p.server
			if err := hangUp(p.client.(*net.TCPConn)); err != nil {
				t.Fatal(err)
			}
			polltest.Until(t, 5*time.Second, time.Millisecond, "the kernel to have the peer's "+name, func() bool {
				return hungUp(t, s)
			})
			if !PeerClosed(s) {
				t.Fatalf("the first PeerClosed after the peer's %s: false, want true", name)
			}
		})
	}
}

// hungUp reports, without reading anything, whether conn's peer hung up
// or reset it.
func hungUp(t *testing.T, conn net.Conn) bool {
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var revents int16
	if err := raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if _, err := unix.Poll(fds, 0); err == nil {
			revents = fds[0].Revents
		}
	}); err != nil {
		t.Fatal(err)
	}
	return revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
}

// BenchmarkPeerClosed is one poll of a watched request (lb.ClientPoll,
// batch's abandonPoll): what each poll period costs per request in
// flight.
func BenchmarkPeerClosed(b *testing.B) {
	s := dialPair(b, "tcp").server
	for b.Loop() {
		if PeerClosed(s) {
			b.Fatal("an open connection was taken as closed")
		}
	}
}
