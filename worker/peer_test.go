package worker_test

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/worker"
)

// connPair returns both ends of a loopback TCP connection: the server's
// (the one a worker asks) and the client's.
func connPair(t testing.TB) (server net.Conn, client *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, c.(*net.TCPConn)
}

// PeerClosed sees a peer that hung up cleanly (FIN: a prep worker's client
// at its deadline) and one that reset the connection (RST: a process
// killed with bytes it had not read, here SO_LINGER 0), at the first ask
// once the kernel has it (poll(2), which consumes nothing, says when); a
// silent peer still waits. The first peek after a reset fails with
// ECONNRESET instead of reading end of file.
func TestPeerClosed(t *testing.T) {
	s, _ := connPair(t)
	if worker.PeerClosed(s) {
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
			s, c := connPair(t)
			if err := hangUp(c); err != nil {
				t.Fatal(err)
			}
			polltest.Until(t, 5*time.Second, time.Millisecond, "the kernel to have the peer's "+name, func() bool {
				return hungUp(t, s)
			})
			if !worker.PeerClosed(s) {
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
	s, _ := connPair(b)
	for b.Loop() {
		if worker.PeerClosed(s) {
			b.Fatal("an open connection was taken as closed")
		}
	}
}
