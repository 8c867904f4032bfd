// Package coarsedeadline gives connections read and write deadlines that
// cost no runtime timer when they are far away: nginx's way, which keeps
// its timers in a tree and reads the clock once per event loop, rather
// than Go's, where every SetReadDeadline moves a timer in the poller.
//
// A server that bounds every request re-arms its connection's deadlines
// several times a request (fasthttp's server: the idle wait, the header
// read, the response write), each time to "now plus a timeout" of tens of
// seconds that almost never fires. Here such a deadline is a number
// stored in the connection, and one goroutine per Set (a tick every
// Set.Tick, only while connections are tracked) looks over them and
// expires the ones that have passed, by setting a deadline in the past
// on the socket: the read or write blocked on it returns a timeout error
// exactly as if its own deadline had fired.
//
// The guarantee: a deadline never fires earlier than asked, and at most
// one tick later (plus however late the tick goroutine is scheduled). A
// deadline nearer than DirectWithin ticks is armed on the socket as is,
// precisely, so short timeouts (tests, a lingering close, "now" to
// interrupt a read) behave as before; with the default tick that bounds
// the lateness to 1/16 of the time asked for.
package coarsedeadline

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTick is the tick of sets made by New(0): a 60 s timeout fires
// at most 62.5 ms late; deadlines under a second away are armed directly.
const DefaultTick = time.Second / 16

// DirectWithin is how many ticks away a deadline must be, at least, to
// be kept by the set rather than armed on the socket.
const DirectWithin = 16

// past is the deadline an expired one is replaced with on the socket.
var past = time.Unix(1, 0)

// epoch is what kept deadlines and ticks are counted from, on the
// monotonic clock (as the runtime's own deadlines are): a step of the
// wall clock neither fires them early nor holds them back.
var epoch = time.Now()

// since is t's distance from epoch, in ns (monotonic when t has a
// monotonic reading, as time.Now().Add(d) has).
func since(t time.Time) int64 { return int64(t.Sub(epoch)) }

// Set tracks connections' coarse deadlines and expires them on its
// tick. The zero value is not usable: call New. Safe for concurrent use.
type Set struct {
	tick time.Duration
	// now is the time of the latest tick (since epoch): what a new deadline
	// is judged near or far against, with no clock read of its own.
	now atomic.Int64

	mu      sync.Mutex
	tracked []*Deadlines
	running bool // the tick goroutine runs
	fired   atomic.Int64
}

// New returns a set that ticks every tick (0: DefaultTick).
func New(tick time.Duration) *Set {
	if tick <= 0 {
		tick = DefaultTick
	}
	return &Set{tick: tick}
}

// Fired counts the deadlines the set has expired on their sockets.
func (s *Set) Fired() int64 { return s.fired.Load() }

// Track returns conn's deadlines, kept by s until Stop. Set conn's
// deadlines only through them from now on.
func (s *Set) Track(conn net.Conn) *Deadlines {
	d := &Deadlines{s: s, conn: conn}
	s.mu.Lock()
	d.index = len(s.tracked)
	s.tracked = append(s.tracked, d)
	if !s.running {
		s.running = true
		s.now.Store(since(time.Now()))
		go s.run()
	}
	s.mu.Unlock()
	return d
}

// run expires the deadlines that have passed, every tick, until no
// connection is tracked.
func (s *Set) run() {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for range t.C {
		now := since(time.Now())
		s.now.Store(now)
		s.mu.Lock()
		if len(s.tracked) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		for _, d := range s.tracked {
			d.expire(now)
		}
		s.mu.Unlock()
	}
}

// Deadlines are one connection's read and write deadlines (Set.Track).
type Deadlines struct {
	s     *Set
	conn  net.Conn
	index int // in s.tracked; -1 once stopped (guarded by s.mu)

	mu  sync.Mutex // orders arming on the socket: a setter against the tick
	dir [2]direction
}

const (
	read = iota
	write
)

type direction struct {
	// at is the deadline the set keeps (since epoch; a kept one is in
	// the future, so never 0); 0: none kept.
	at atomic.Int64
	// onSocket: a deadline is armed on the socket (a near one, or a
	// kept one that expired), to clear when a kept or no deadline
	// replaces it. Guarded by Deadlines.mu.
	onSocket bool
}

// SetReadDeadline is net.Conn's, for the tracked connection.
func (d *Deadlines) SetReadDeadline(t time.Time) error { return d.set(read, t) }

// SetWriteDeadline is net.Conn's, for the tracked connection.
func (d *Deadlines) SetWriteDeadline(t time.Time) error { return d.set(write, t) }

// SetDeadline is net.Conn's, for the tracked connection.
func (d *Deadlines) SetDeadline(t time.Time) error {
	if err := d.set(read, t); err != nil {
		return err
	}
	return d.set(write, t)
}

// Stop ends the tracking: no deadline kept by the set fires from now on
// (what is armed on the socket stays). Call it before closing the
// connection, or before handling its deadlines on the socket directly.
func (d *Deadlines) Stop() {
	s := d.s
	s.mu.Lock()
	if i := d.index; i >= 0 {
		last := len(s.tracked) - 1
		s.tracked[i] = s.tracked[last]
		s.tracked[i].index = i
		s.tracked[last] = nil
		s.tracked = s.tracked[:last]
		d.index = -1
	}
	s.mu.Unlock()
}

func (d *Deadlines) set(i int, t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dir := &d.dir[i]
	if !t.IsZero() && since(t)-d.s.now.Load() < DirectWithin*int64(d.s.tick) {
		// Near (or past): armed precisely, on the socket.
		dir.at.Store(0)
		dir.onSocket = true
		return d.arm(i, t)
	}
	var at int64 // zero t: none
	if !t.IsZero() {
		at = since(t)
	}
	dir.at.Store(at)
	if dir.onSocket {
		dir.onSocket = false
		return d.arm(i, time.Time{})
	}
	return nil
}

// expire arms past on the socket for each deadline kept that is no
// later than now. Called by the tick, under s.mu.
func (d *Deadlines) expire(now int64) {
	for i := range d.dir {
		at := d.dir[i].at.Load()
		if at == 0 || at > now {
			continue
		}
		d.mu.Lock()
		if d.dir[i].at.Load() == at { // not moved meanwhile
			d.dir[i].at.Store(0)
			d.dir[i].onSocket = true
			// Counted before arming: the read it ends may look at Fired
			// as soon as it wakes.
			d.s.fired.Add(1)
			_ = d.arm(i, past) // a closed socket: its reads fail anyway
		}
		d.mu.Unlock()
	}
}

func (d *Deadlines) arm(i int, t time.Time) error {
	if i == read {
		return d.conn.SetReadDeadline(t)
	}
	return d.conn.SetWriteDeadline(t)
}
