package budget

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/internal/osmem"
)

// A Lane is a kind of charge with its room and places (see the package
// doc). Its exported fields are data, set before New and never changed
// after, but for Room through SetRoom; the rest is its state, guarded
// by its budget.
type Lane struct {
	Name string // what it holds ("large decodes"), for errors and logs
	// Room is the most bytes the lane's charges, and those of the lanes
	// within it, hold together. 0 in a lane Within another: no bound of
	// its own, only the outer lane's.
	Room int64
	// Places is the most charges the lane holds at once; 0: any number.
	Places int
	// Within is the lane whose room this one shares (nil: none): its
	// charges count in both, and must fit both.
	Within *Lane
	// Heir makes the first waiter of the lane the heir of the lanes it
	// is within: the room it lacks, up to what its own lane has room
	// for, is held back from their other lanes' charges until it is let
	// in, so that room freed goes to it first. Without it, a large
	// charge waiting loses the room to the small ones that take it the
	// moment it frees, for as long as they keep coming; bounded by its
	// lane's room, a heir that never fits keeps nobody out of the room
	// its lane leaves to the others.
	Heir bool
	// Burst (nil: none) follows the lane's bytes, so that a burst of at
	// least BurstBytes hands its memory back to the OS once it is over
	// (internal/osmem).
	Burst      *osmem.Gauge
	BurstBytes int64

	b     *Budget
	bytes int64     // held by its charges and those of lanes within it
	in    int       // its charges
	queue []*waiter // waiting to enter, first come first
}

// A Budget holds lanes and lets charges in and out of them. Safe for
// concurrent use.
type Budget struct {
	mu    sync.Mutex
	lanes []*Lane // in the order given to New: the order waiters are let in
}

// waiter is a Wait not yet let in; c is set, and ready closed, when it
// has been.
type waiter struct {
	n     int64
	c     *Charge
	ready chan struct{}
}

// Poll is how often a Wait asks its gone function whether to go on.
const Poll = 20 * time.Millisecond

// New makes a budget of lanes; a lane may be in one budget only, and
// the lane it is Within in the same one.
func New(lanes ...*Lane) *Budget {
	b := &Budget{lanes: lanes}
	for _, l := range lanes {
		if l.b != nil {
			panic(fmt.Sprintf("budget: lane %q is in a budget already", l.Name))
		}
		l.b = b
	}
	for _, l := range lanes {
		if l.Within != nil && l.Within.b != b {
			panic(fmt.Sprintf("budget: lane %q is within %q, which is not in its budget", l.Name, l.Within.Name))
		}
	}
	return b
}

// ErrBusy is a refusal of bytes that fit the lane's room but not beside
// what it holds now (or not before those waiting for it): retry later.
var ErrBusy = errors.New("the lane has no room now")

// ErrReleased is a Grow of a charge already released.
var ErrReleased = errors.New("the charge was released")

// ErrTooLarge is what a *TooLargeError Is.
var ErrTooLarge = errors.New("more than the lane could ever hold")

// TooLargeError refuses a charge of N bytes in a lane whose room (with
// those it is within) is Room: it could never fit.
type TooLargeError struct {
	Lane    string
	N, Room int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%d bytes are more than the %s lane could ever hold (%d)", e.N, e.Lane, e.Room)
}

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Capacity is the most one charge of l could ever hold: the least room
// of l and the lanes it is within.
func (l *Lane) Capacity() int64 {
	c := int64(-1)
	for x := l; x != nil; x = x.Within {
		if x.Room > 0 || x.Within == nil {
			if c < 0 || x.Room < c {
				c = x.Room
			}
		}
	}
	return max(c, 0)
}

// Check returns a *TooLargeError when n bytes could never fit l.
func (l *Lane) Check(n int64) error {
	if c := l.Capacity(); n > c {
		return &TooLargeError{Lane: l.Name, N: n, Room: c}
	}
	return nil
}

// SetRoom changes l's room (a configuration reloaded) and lets in
// whoever now fits. Room made smaller than what l holds refuses new
// charges until enough are released; none is taken back.
func (b *Budget) SetRoom(l *Lane, room int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.own(l)
	l.Room = max(room, 0)
	b.admit()
}

// State is what a lane holds and queues, for tests, metrics and logs.
type State struct {
	In      int   // charges held
	Bytes   int64 // their bytes, with those of the lanes within it
	Waiting int   // waits queued
}

// State is l's state now.
func (l *Lane) State() State {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	return State{In: l.in, Bytes: l.bytes, Waiting: len(l.queue)}
}

// Reserve takes n bytes of lane (and a place) at once, or refuses: a
// *TooLargeError when they could never fit, ErrBusy when they do not
// fit now or someone waits before them. A negative n counts as 0.
func (b *Budget) Reserve(n int64, lane *Lane) (*Charge, error) {
	n = max(n, 0)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.own(lane)
	if err := lane.Check(n); err != nil {
		return nil, err
	}
	if lane.waitedFor() || !lane.fits(n, true) {
		return nil, ErrBusy
	}
	return lane.take(n), nil
}

// Wait is Reserve that waits its turn, first come first served in its
// lane, until the bytes fit; it gives up with context.Cause when ctx is
// done, or with gone's error (asked every Poll; nil: never), holding
// nothing. What could never fit is refused at once.
func (b *Budget) Wait(ctx context.Context, n int64, lane *Lane, gone func() error) (*Charge, error) {
	n = max(n, 0)
	b.mu.Lock()
	b.own(lane)
	if err := lane.Check(n); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	if !lane.waitedFor() && lane.fits(n, true) {
		c := lane.take(n)
		b.mu.Unlock()
		return c, nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	lane.queue = append(lane.queue, w)
	b.mu.Unlock()

	var tick <-chan time.Time
	if gone != nil {
		t := time.NewTicker(Poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-w.ready:
			return w.c, nil
		case <-ctx.Done():
			b.quit(lane, w)
			return nil, context.Cause(ctx)
		case <-tick:
			if err := gone(); err != nil {
				b.quit(lane, w)
				return nil, err
			}
		}
	}
}

// quit takes w out of lane's queue; if it was let in meanwhile, its
// charge is released instead.
func (b *Budget) quit(lane *Lane, w *waiter) {
	b.mu.Lock()
	c := w.c
	if c == nil {
		lane.queue = slices.DeleteFunc(lane.queue, func(x *waiter) bool { return x == w })
		b.admit() // one behind w may fit now
	}
	b.mu.Unlock()
	c.Release()
}

// own panics unless lane is b's: a charge in another budget's lane would
// be counted where nobody looks.
func (b *Budget) own(lane *Lane) {
	if lane.b != b {
		panic(fmt.Sprintf("budget: lane %q is not in this budget", lane.Name))
	}
}

// waitedFor reports whether someone waits in l or a lane it is within.
func (l *Lane) waitedFor() bool {
	for x := l; x != nil; x = x.Within {
		if len(x.queue) > 0 {
			return true
		}
	}
	return false
}

// fits reports whether n more bytes (and a place, with place) fit l and
// every lane it is within, beside what their heirs hold back from l.
// room − bytes − held never overflows: room, bytes and held are ≥ 0.
func (l *Lane) fits(n int64, place bool) bool {
	if place && l.Places > 0 && l.in >= l.Places {
		return false
	}
	for x := l; x != nil; x = x.Within {
		if (x.Room > 0 || x.Within == nil) && n > x.Room-x.bytes-l.heldBack(x) {
			return false
		}
	}
	return true
}

// heldBack is the room of x the heirs of lanes within it, other than l
// and the lanes l is within, hold back from l (see Lane.Heir): what each
// lacks, up to its own lane's room left.
func (l *Lane) heldBack(x *Lane) int64 {
	var held int64
	for _, h := range l.b.lanes {
		if !h.Heir || len(h.queue) == 0 || l.within(h) || !h.within(x) {
			continue
		}
		claim := h.queue[0].n
		if h.Room > 0 {
			claim = min(claim, h.Room-h.bytes)
		}
		held = min(held+max(claim, 0), x.Room)
	}
	return held
}

// within reports whether l is x or a lane within x.
func (l *Lane) within(x *Lane) bool {
	for y := l; y != nil; y = y.Within {
		if y == x {
			return true
		}
	}
	return false
}

// take makes a charge of n bytes in l, which fit.
func (l *Lane) take(n int64) *Charge {
	l.in++
	l.add(n)
	return &Charge{lane: l, n: n}
}

// add moves l's bytes, and those of the lanes it is within, by n.
func (l *Lane) add(n int64) {
	for x := l; x != nil; x = x.Within {
		x.bytes += n
		if x.Burst != nil {
			x.Burst.Add(n, x.BurstBytes)
		}
	}
}

// admit lets in, in each lane's order, every waiter that now fits. Room
// only shrinks as it goes (a heir let in holds what it held back), so
// one pass over the lanes is enough.
func (b *Budget) admit() {
	for _, l := range b.lanes {
		for len(l.queue) > 0 && l.fits(l.queue[0].n, true) {
			w := l.queue[0]
			l.queue = l.queue[1:]
			w.c = l.take(w.n)
			close(w.ready)
		}
	}
}

// A Charge is what one piece of work holds in a lane: bytes, and a
// place. Safe for use from any goroutine. The nil *Charge holds nothing
// and grows to anything: what work outside any budget holds.
type Charge struct {
	lane     *Lane
	n        int64
	released bool
}

// Bytes is what c holds now (0 once released).
func (c *Charge) Bytes() int64 {
	if c == nil {
		return 0
	}
	c.lane.b.mu.Lock()
	defer c.lane.b.mu.Unlock()
	return c.n
}

// Grow makes c hold at least to bytes, without waiting: nil when it
// does (already, or now), else it holds what it held and the error says
// why (ErrBusy, a *TooLargeError, ErrReleased). A charge that holds
// nothing yet does not overtake those waiting for its lane; one that
// holds bytes may grow past them (it is at work already).
func (c *Charge) Grow(to int64) error {
	if c == nil {
		return nil
	}
	l := c.lane
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	switch {
	case c.released:
		return ErrReleased
	case to <= c.n:
		return nil
	}
	if err := l.Check(to); err != nil {
		return err
	}
	if c.n == 0 && l.waitedFor() || !l.fits(to-c.n, false) {
		return ErrBusy
	}
	l.add(to - c.n)
	c.n = to
	return nil
}

// Shrink makes c hold at most to bytes (a negative to counts as 0),
// giving back the rest and letting in whoever now fits: the part of a
// piece of work's memory it has dropped (a decompression's chunks, once
// copied into its result). The charge keeps its place; Release still
// ends it.
func (c *Charge) Shrink(to int64) {
	if c == nil {
		return
	}
	to = max(to, 0)
	l := c.lane
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if c.released || to >= c.n {
		return
	}
	l.add(to - c.n)
	c.n = to
	l.b.admit()
}

// Close is Release, so that a charge can be handed to whatever closes
// its io.Closers once the work is done (a fasthttp request's user
// values, a response's body stream). It always returns nil.
func (c *Charge) Close() error {
	c.Release()
	return nil
}

// Release gives back what c holds, and lets in whoever now fits. Only
// the first call does anything.
func (c *Charge) Release() {
	if c == nil {
		return
	}
	l := c.lane
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if c.released {
		return
	}
	c.released = true
	l.in--
	l.add(-c.n)
	c.n = 0
	l.b.admit()
}
