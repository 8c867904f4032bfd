package coarsedeadline

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// pair is a connected loopback TCP pair: ours, and the peer's.
func pair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, peer
}

// readErr is c's next read's error, and how long it took.
func readErr(c net.Conn) (time.Duration, error) {
	start := time.Now()
	var b [1]byte
	_, err := c.Read(b[:])
	return time.Since(start), err
}

// TestKeptDeadlineFires: a deadline far enough to be kept by the set
// (over DirectWithin ticks away) ends the read blocked on it with a
// timeout, never before it and within a bound, and the tick counts it.
func TestKeptDeadlineFires(t *testing.T) {
	s := New(5 * time.Millisecond)
	c, _ := pair(t)
	d := s.Track(c)
	defer d.Stop()
	const after = 300 * time.Millisecond // 60 ticks: kept
	if err := d.SetReadDeadline(time.Now().Add(after)); err != nil {
		t.Fatal(err)
	}
	took, err := readErr(c)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read ended with %v, want a deadline exceeded", err)
	}
	if took < after || took > after+2*time.Second {
		t.Errorf("the read timed out after %v, want %v to %v", took, after, after+2*time.Second)
	}
	if s.Fired() != 1 {
		t.Errorf("the set fired %d deadlines, want 1", s.Fired())
	}
}

// TestMovedDeadlineClearsAFiredOne: once a kept deadline has fired, a
// later one set on the connection replaces it on the socket, so the
// next read waits for data instead of failing at once.
func TestMovedDeadlineClearsAFiredOne(t *testing.T) {
	s := New(5 * time.Millisecond)
	c, peer := pair(t)
	d := s.Track(c)
	defer d.Stop()
	if err := d.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := readErr(c); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("first read ended with %v, want a deadline exceeded", err)
	}
	if err := d.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := readErr(c); err != nil {
		t.Errorf("read after the deadline moved: %v, want the peer's byte", err)
	}
	// And clearing it: a fired deadline does not outlive SetReadDeadline(zero).
	if err := d.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := readErr(c); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("third read ended with %v, want a deadline exceeded", err)
	}
	if err := d.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := readErr(c); err != nil {
		t.Errorf("read after the deadline was cleared: %v, want the peer's byte", err)
	}
}

// TestNearDeadlineIsArmedDirectly: a deadline nearer than DirectWithin
// ticks is armed on the socket as is: with a one-second tick, a 50 ms
// deadline fires long before any tick could have, and the set fires
// nothing.
func TestNearDeadlineIsArmedDirectly(t *testing.T) {
	s := New(time.Second)
	c, _ := pair(t)
	d := s.Track(c)
	defer d.Stop()
	if err := d.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	took, err := readErr(c)
	if !errors.Is(err, os.ErrDeadlineExceeded) || took > 900*time.Millisecond {
		t.Errorf("read ended with %v after %v, want a deadline exceeded well before the first tick", err, took)
	}
	if s.Fired() != 0 {
		t.Errorf("the set fired %d deadlines, want 0 (the socket's own fired)", s.Fired())
	}
	// A kept one replaces the direct one on the socket.
	if err := d.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := d.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("z")); err != nil {
		t.Errorf("write under a kept deadline: %v", err)
	}
}

// TestStoppedConnectionIsForgotten: after Stop no kept deadline fires,
// and the tick goroutine ends once nothing is tracked.
func TestStoppedConnectionIsForgotten(t *testing.T) {
	s := New(5 * time.Millisecond)
	c, peer := pair(t)
	d := s.Track(c)
	if err := d.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, "the tick goroutine to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.running
	})
	// The goroutine ended, so nothing can fire; after the deadline has
	// passed, a read still waits for data.
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, "the kept deadline to pass", func() bool {
		return since(time.Now()) > d.dir[read].at.Load()
	})
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := readErr(c); err != nil {
		t.Errorf("read on a stopped connection: %v, want the peer's byte", err)
	}
	if s.Fired() != 0 {
		t.Errorf("the set fired %d deadlines after Stop, want 0", s.Fired())
	}
}

type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// BenchmarkSetDeadlines is a request's three deadline moves on a
// server connection (the idle wait, the header, the response write),
// as fasthttp makes them: kept by a Set, and armed on the socket.
func BenchmarkSetDeadlines(b *testing.B) {
	for _, bc := range []struct {
		name string
		conn func(net.Conn) deadliner
	}{
		{"coarse", func(c net.Conn) deadliner {
			d := New(0).Track(c)
			b.Cleanup(d.Stop)
			return d
		}},
		{"socket", func(c net.Conn) deadliner {
			return c
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, _ := pair(b)
			d := bc.conn(c)
			b.ReportAllocs()
			for b.Loop() {
				_ = d.SetReadDeadline(time.Now().Add(120 * time.Second))
				_ = d.SetReadDeadline(time.Now().Add(60 * time.Second))
				_ = d.SetWriteDeadline(time.Now().Add(60 * time.Second))
			}
		})
	}
}

// TestSetRacingTheTick: deadlines that the tick expires about when
// they are moved again (the sleep before the move spans the deadline,
// at varying phases) never leave a stale expiry behind: after each move
// to a far deadline, a read of a byte already there succeeds. Run with
// -race.
func TestSetRacingTheTick(t *testing.T) {
	const tick = 200 * time.Microsecond
	s := New(tick)
	const conns, rounds = 4, 200
	errs := make(chan error, conns)
	for range conns {
		c, peer := pair(t)
		d := s.Track(c)
		t.Cleanup(d.Stop)
		go func() {
			for i := range rounds {
				if err := d.SetReadDeadline(time.Now().Add((DirectWithin + 1) * tick)); err != nil {
					errs <- err
					return
				}
				// The race's phase, not a wait for a state: the move
				// comes just before, at, or after the deadline.
				<-time.After(time.Duration(DirectWithin-1+i%4) * tick)
				if err := d.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
					errs <- err
					return
				}
				if _, err := peer.Write([]byte("x")); err != nil {
					errs <- err
					return
				}
				if _, err := readErr(c); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Fatalf("a read after the deadline moved far: %v", err)
		}
	}
	if s.Fired() == 0 {
		t.Error("the tick fired no deadline: the race was not run")
	}
	t.Logf("%d of %d deadlines fired before they moved", s.Fired(), conns*rounds)
}
