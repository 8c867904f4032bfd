package hangup

import (
	"errors"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// within bounds every wait for an event that must come.
const within = 5 * time.Second

// pair is a connected pair: server is the side a handler owns and
// watches, client the peer that hangs up.
type pair struct{ server, client net.Conn }

// dialPair connects over network ("tcp": loopback, "unix": a socket in a
// temp dir).
func dialPair(t testing.TB, network string) pair {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen %s %q: %v", network, addr, err)
	}
	defer ln.Close()
	client, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatalf("dial %s: %v", ln.Addr(), err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return pair{server, client}
}

func watcher(t *testing.T) *Watcher {
	t.Helper()
	w, err := Default()
	if err != nil {
		t.Fatalf("no watcher: %v", err)
	}
	return w
}

// watch watches p.server and returns a channel closed by onGone (a
// second call would panic: onGone runs once) and cancel.
func watch(t *testing.T, w *Watcher, c net.Conn) (<-chan struct{}, func()) {
	t.Helper()
	gone := make(chan struct{})
	cancel, err := w.Watch(c, func() { close(gone) })
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	t.Cleanup(cancel)
	return gone, cancel
}

func waitGone(t *testing.T, gone <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(within):
		t.Fatalf("%s: onGone not called within %s", what, within)
	}
}

// quiet asserts onGone is not called within a short while.
func quiet(t *testing.T, gone <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-gone:
		t.Fatalf("%s: onGone was called", what)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestCloseIsSeen(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			p := dialPair(t, network)
			gone, _ := watch(t, watcher(t), p.server)
			quiet(t, gone, "an open connection")
			p.client.Close()
			waitGone(t, gone, "the peer closed")
		})
	}
}

// TestResetIsSeen: a peer that closes with SO_LINGER 0 sends RST, not FIN.
func TestResetIsSeen(t *testing.T) {
	p := dialPair(t, "tcp")
	gone, _ := watch(t, watcher(t), p.server)
	if err := p.client.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	p.client.Close()
	waitGone(t, gone, "the peer reset")
	if PeerClosed(p.server) != true {
		t.Error("PeerClosed says a reset connection is open")
	}
}

// TestAlreadyClosedIsSeen: registering a connection whose peer has
// already gone calls onGone at once.
func TestAlreadyClosedIsSeen(t *testing.T) {
	p := dialPair(t, "unix")
	p.client.Close()
	gone, _ := watch(t, watcher(t), p.server)
	waitGone(t, gone, "watched after the peer closed")
}

// TestFINAfterPendingBytesIsGone: a peer that sent bytes nobody has read
// yet (a pipelined request) and then shut down its sending side is taken
// as gone, while PeerClosed, which peeks, still says open.
func TestFINAfterPendingBytesIsGone(t *testing.T) {
	p := dialPair(t, "tcp")
	gone, _ := watch(t, watcher(t), p.server)
	if _, err := p.client.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	quiet(t, gone, "pending bytes, no FIN")
	if err := p.client.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gone, "FIN after pending bytes")
	if PeerClosed(p.server) {
		t.Error("PeerClosed says gone with bytes pending, want open (it peeks)")
	}
}

func TestCancelBeforeTheEvent(t *testing.T) {
	w := watcher(t)
	p := dialPair(t, "unix")
	var calls atomic.Int32
	cancel, err := w.Watch(p.server, func() { calls.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	cancel() // twice is allowed
	p.client.Close()
	// A second watch on a fresh pair, closed after this one: once it has
	// fired, the event loop has gone past the first close.
	q := dialPair(t, "unix")
	gone, _ := watch(t, w, q.server)
	q.client.Close()
	waitGone(t, gone, "a later watch")
	if n := calls.Load(); n != 0 {
		t.Errorf("onGone ran %d times after cancel, want 0", n)
	}
}

// TestCancelWaitsForOnGone: a cancel that races with the event returns
// only once onGone has returned.
func TestCancelWaitsForOnGone(t *testing.T) {
	w := watcher(t)
	p := dialPair(t, "tcp")
	entered, release := make(chan struct{}), make(chan struct{})
	var done atomic.Bool
	cancel, err := w.Watch(p.server, func() { close(entered); <-release; done.Store(true) })
	if err != nil {
		t.Fatal(err)
	}
	p.client.Close()
	waitGone(t, entered, "the peer closed")
	cancelled := make(chan struct{})
	go func() { cancel(); close(cancelled) }()
	select {
	case <-cancelled:
		t.Fatal("cancel returned while onGone was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	waitGone(t, cancelled, "cancel after onGone returned")
	if !done.Load() {
		t.Error("cancel returned before onGone did")
	}
}

// TestCancelAfterClose: the handler may close its connection before it
// cancels; cancel then only forgets the registration.
func TestCancelAfterClose(t *testing.T) {
	w := watcher(t)
	p := dialPair(t, "unix")
	cancel, err := w.Watch(p.server, func() {})
	if err != nil {
		t.Fatal(err)
	}
	before := w.Watching()
	p.server.Close()
	cancel()
	if n := w.Watching(); n != before-1 {
		t.Errorf("%d registrations after cancel, want %d", n, before-1)
	}
}

// TestDescriptorReuseAfterCancel: a descriptor freed by a cancelled,
// closed connection and taken by the next socket carries only the new
// registration: the old onGone never runs for the new peer's hang-up.
func TestDescriptorReuseAfterCancel(t *testing.T) {
	w := watcher(t)
	var old atomic.Int32
	for i := range 20 {
		p := dialPair(t, "tcp")
		cancel, err := w.Watch(p.server, func() { old.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		p.server.Close()
		q := dialPair(t, "tcp") // likely the freed descriptor numbers
		gone, _ := watch(t, w, q.server)
		q.client.Close()
		waitGone(t, gone, "the new connection's peer closed")
		p.client.Close()
		if n := old.Load(); n != 0 {
			t.Fatalf("round %d: a cancelled watch's onGone ran %d times", i, n)
		}
	}
}

func TestManyConnections(t *testing.T) {
	w := watcher(t)
	const n = 300
	var fired atomic.Int32
	pairs := make([]pair, n)
	for i := range pairs {
		pairs[i] = dialPair(t, "unix")
		cancel, err := w.Watch(pairs[i].server, func() { fired.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cancel)
	}
	for i := 0; i < n; i += 2 {
		pairs[i].client.Close()
	}
	polltest.Wait(within, 5*time.Millisecond, func() bool { return fired.Load() >= n/2 })
	if got := fired.Load(); got != n/2 {
		t.Errorf("%d of %d connections' hang-ups seen, want %d", got, n/2, n/2)
	}
}

func TestUnwatchable(t *testing.T) {
	w := watcher(t)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := w.Watch(a, func() {}); !errors.Is(err, ErrUnwatchable) {
		t.Errorf("Watch(net.Pipe) = %v, want ErrUnwatchable", err)
	}
	p := dialPair(t, "tcp")
	p.server.Close()
	if _, err := w.Watch(p.server, func() {}); !errors.Is(err, ErrUnwatchable) {
		t.Errorf("Watch(closed conn) = %v, want ErrUnwatchable", err)
	}
}

// BenchmarkWatchCancel is the cost a request answered before any hang-up
// pays: one registration and its cancel.
func BenchmarkWatchCancel(b *testing.B) {
	w, err := Default()
	if err != nil {
		b.Skip(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	c, _ := net.Dial("tcp", ln.Addr().String())
	defer c.Close()
	s, _ := ln.Accept()
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		cancel, err := w.Watch(s, func() {})
		if err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
