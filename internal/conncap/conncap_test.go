package conncap

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

func capped(t *testing.T, maxConns int) (*Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(ln, maxConns, []byte("busy"))
	t.Cleanup(func() { _ = l.Close() })
	return l, ln.Addr().String()
}

// A connection over the cap gets the answer and is closed; closing an
// admitted one frees its place, once however often it is closed.
func TestCapAnswersAndGivesBack(t *testing.T) {
	l, addr := capped(t, 1)
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	first := dial(t, addr)
	held := <-accepted
	second := dial(t, addr)
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(second); err != nil || string(b) != "busy" {
		t.Fatalf("over the cap: read %q (%v), want the answer then EOF", b, err)
	}
	if l.Refused() != 1 || l.Open() != 1 {
		t.Fatalf("refused %d, open %d; want 1, 1", l.Refused(), l.Open())
	}
	_ = held.Close()
	_ = held.Close()
	if got := l.Open(); got != 0 {
		t.Fatalf("open = %d after two closes, want 0", got)
	}
	_ = first.Close()
	dial(t, addr)
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "a connection admitted in the freed place",
		func() bool { return len(accepted) == 1 })
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
