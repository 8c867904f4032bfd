package h2conn

import (
	"strconv"
	"testing"
	"time"
)

// fakeClock is a penaltyBox's clock, moved by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func clockedBox(base time.Duration, entries int) (*penaltyBox, *fakeClock) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	b := newPenaltyBox(base, entries)
	b.now = c.now
	return b, c
}

// A struck address gets one new connection per wait, the wait doubling
// with each strike up to 16x; other addresses are not slowed.
func TestPenaltyBoxRate(t *testing.T) {
	b, c := clockedBox(time.Second, 8)
	b.strike("a")
	if b.admit("a") {
		t.Error("a struck address was admitted at once")
	}
	if !b.admit("b") {
		t.Error("an address never struck was refused")
	}
	c.advance(time.Second)
	if !b.admit("a") || b.admit("a") {
		t.Error("after the wait, want one connection admitted, then refusals")
	}
	b.strike("a")
	c.advance(time.Second)
	if b.admit("a") {
		t.Error("a second strike did not double the wait")
	}
	c.advance(time.Second)
	if !b.admit("a") {
		t.Error("not admitted after twice the base wait")
	}
	for range 10 {
		b.strike("a")
	}
	c.advance(16 * time.Second)
	if !b.admit("a") {
		t.Error("the wait grew beyond 16x the base")
	}
}

// A penalty is forgotten after twice the longest wait without a strike.
func TestPenaltyBoxDecays(t *testing.T) {
	b, c := clockedBox(time.Second, 8)
	b.strike("a")
	c.advance(32*time.Second + time.Millisecond)
	if !b.admit("a") {
		t.Error("a decayed penalty still refuses")
	}
	if n := b.size(); n != 0 {
		t.Errorf("%d addresses held after the decay, want 0", n)
	}
	b.strike("a")
	if b.admit("a") {
		t.Error("a strike after the decay does not penalise")
	}
}

// The table holds at most its bound, dropping the least recently struck.
func TestPenaltyBoxBounded(t *testing.T) {
	b, _ := clockedBox(time.Second, 4)
	for i := range 10 {
		b.strike("10.0.0." + strconv.Itoa(i))
	}
	if n := b.size(); n != 4 {
		t.Errorf("%d addresses held, want the bound, 4", n)
	}
	if !b.admit("10.0.0.0") || b.admit("10.0.0.9") {
		t.Error("want the oldest strike dropped and the newest kept")
	}
}

func TestPenaltyBoxOff(t *testing.T) {
	b, _ := clockedBox(0, 4)
	b.strike("a")
	if !b.admit("a") || b.size() != 0 {
		t.Error("a penalty of 0 (off) refused a connection or kept an address")
	}
}
