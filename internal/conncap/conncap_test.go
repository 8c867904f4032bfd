package conncap

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
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

// failingListener fails its first accepts with errs, then accepts from
// the listener it wraps.
type failingListener struct {
	net.Listener
	errs []error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	return l.Listener.Accept()
}

// An accept that fails for want of descriptors or memory (a connection
// flood on another listener of the process) is retried after a growing
// pause, each failure told to OnAcceptError, and the next connection is
// accepted: returned, it ended the master. Any other error is returned.
func TestAcceptRetriesWhenOutOfDescriptors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busy := []error{
		&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)},
		&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)},
		&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENOBUFS)},
	}
	l := New(&failingListener{Listener: ln, errs: busy}, 0, nil)
	t.Cleanup(func() { _ = l.Close() })
	var told []error
	l.OnAcceptError = func(err error) { told = append(told, err) }
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	got, err := l.Accept()
	if err != nil {
		t.Fatalf("accept after EMFILE, ENFILE, ENOBUFS: %v, want the waiting connection", err)
	}
	got.Close()
	if len(told) != len(busy) {
		t.Errorf("OnAcceptError told of %d failures, want %d", len(told), len(busy))
	}
	if took := time.Since(start); took < 35*time.Millisecond {
		t.Errorf("three failed accepts retried in %v, want pauses of 5, 10 and 20ms", took)
	}

	other := errors.New("listener broken")
	l = New(&failingListener{Listener: ln, errs: []error{other}}, 0, nil)
	if _, err := l.Accept(); !errors.Is(err, other) {
		t.Fatalf("accept failing otherwise: %v, want the error returned", err)
	}
}

// HTTPBusy is a response net/http reads whole: 503, Retry-After, close,
// the content type and exactly the body.
func TestHTTPBusyIsAWholeResponse(t *testing.T) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(HTTPBusy("s", "text/plain", []byte("busy\n")))), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close ||
		resp.Header.Get("Content-Type") != "text/plain" || resp.Header.Get("Server") != "s" || string(body) != "busy\n" {
		t.Fatalf("status %d, headers %v, close %v, body %q; want 503, Retry-After 1, close, text/plain from s, \"busy\\n\"",
			resp.StatusCode, resp.Header, resp.Close, body)
	}
}

// wrapped is a user's connection type over Conn (Listener.Wrap).
type wrapped struct{ *Conn }

// TestAdmitRefusesAndWrapWraps: a connection Admit answers is written
// that answer and closed, its place given back; an admitted one is what
// Wrap makes of it.
func TestAdmitRefusesAndWrapWraps(t *testing.T) {
	l, addr := capped(t, 4)
	var refuse atomic.Bool
	refuse.Store(true)
	l.Admit = func(net.Conn) []byte {
		if refuse.Load() {
			return []byte("go away")
		}
		return nil
	}
	l.Wrap = func(c *Conn) net.Conn { return wrapped{c} }
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	first := dial(t, addr)
	_ = first.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(first); err != nil || string(b) != "go away" {
		t.Fatalf("refused by Admit: read %q (%v), want its answer then EOF", b, err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the refused connection's place given back",
		func() bool { return l.Open() == 0 })
	refuse.Store(false)
	dial(t, addr)
	select {
	case c := <-accepted:
		if _, ok := c.(wrapped); !ok {
			t.Fatalf("Accept returned %T, want what Wrap made", c)
		}
		_ = c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the admitted connection was not accepted")
	}
}

// TestStopListening: a listener over one that cannot stop listening
// says so.
func TestStopListening(t *testing.T) {
	l, _ := capped(t, 1)
	if err := l.StopListening(); err == nil {
		t.Fatal("StopListening over a plain TCP listener reported success")
	}
}
