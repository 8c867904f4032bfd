package listenstop

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// listenWithDup listens on loopback and keeps a second descriptor of the
// socket open, as tableflip does for the next upgrade.
func listenWithDup(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dup, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dup.Close() })
	return ln, ln.Addr().String()
}

func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

// Closing the listener leaves the socket listening while another
// descriptor of it is open: connections are queued, never accepted.
func TestClosedListenerWithADupStillQueuesConnections(t *testing.T) {
	ln, addr := listenWithDup(t)
	ln.Close()
	if err := dial(addr); err != nil {
		t.Fatalf("dial after Close with a dup open: %v; want it queued (why Shutdown exists)", err)
	}
}

func TestStopListeningRefusesNewConnections(t *testing.T) {
	ln, addr := listenWithDup(t)
	l := Wrap(ln)
	if err := dial(addr); err != nil {
		t.Fatalf("dial before the stop: %v", err)
	}
	if err := l.StopListening(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after StopListening: %v, want net.ErrClosed (a server's quiet end)", err)
	}
	l.Close()
	if err := dial(addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after StopListening: %v, want connection refused", err)
	}
}
