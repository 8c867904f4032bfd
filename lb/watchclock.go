package lb

import (
	"sync"
	"time"
)

// watchTick is how often the watch clock looks for watches that are
// due: a watch starts between watchDelay and watchDelay + 2 ticks after
// its exchange, and a poll comes at most 2 ticks late.
const watchTick = watchDelay / 4

// watchClock is when each watch looks at its client next: nginx's way
// with timers rather than Go's. A runtime timer per request (armed at
// the exchange's start, stopped at its end, almost never firing: most
// answers come within watchDelay) cost about a microsecond of the
// master's CPU a request, a timer allocation and its heap's lock; here a
// request adds itself to a list and removes itself again, and one
// goroutine ticks every watchTick while requests are watched, looking
// over the list (as many entries as watched requests in flight).
//
// Lock order: a watch's mu, then the clock's.
type watchClock struct {
	mu      sync.Mutex
	due     []*watch      // in no order; a watch's index is its place
	now     time.Duration // since epoch, at the last tick
	running bool          // the tick goroutine runs
	quiet   int           // ticks in a row the list was empty
}

// watches is the lb's watch clock, shared by every Proxy.
var watches watchClock

// epoch is what the clock counts from, on the monotonic clock.
var epoch = time.Now()

// add lists w to act after d (at least d from now, at most d + 2 ticks).
func (c *watchClock) add(w *watch, d time.Duration) {
	c.mu.Lock()
	if !c.running {
		c.running = true
		c.now = time.Since(epoch)
		go c.run()
	}
	// now is up to a tick old: d from it plus a tick is d from now or later.
	w.at = c.now + d + watchTick
	w.index = len(c.due)
	c.due = append(c.due, w)
	c.mu.Unlock()
}

// remove unlists w, if listed.
func (c *watchClock) remove(w *watch) {
	c.mu.Lock()
	c.unlist(w)
	c.mu.Unlock()
}

// unlist is remove, under mu.
func (c *watchClock) unlist(w *watch) {
	i := w.index
	if i < 0 {
		return
	}
	last := len(c.due) - 1
	c.due[i] = c.due[last]
	c.due[i].index = i
	c.due[last] = nil
	c.due = c.due[:last]
	w.index = -1
}

// run ticks until the list has stayed empty for a few ticks (not at
// once: under light load the list empties between requests, and a
// goroutine started per request would cost more than the timer did).
func (c *watchClock) run() {
	t := time.NewTicker(watchTick)
	defer t.Stop()
	var fire []*watch
	for range t.C {
		fire = c.take(fire[:0])
		if fire == nil {
			return
		}
		for i, w := range fire {
			w.tick()
			fire[i] = nil
		}
	}
}

// take unlists the watches due and returns them (appended to fire);
// nil once the clock has stopped.
func (c *watchClock) take(fire []*watch) []*watch {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = time.Since(epoch)
	if len(c.due) == 0 {
		if c.quiet++; c.quiet >= 4 {
			c.running, c.quiet = false, 0
			return nil
		}
	} else {
		c.quiet = 0
	}
	for i := 0; i < len(c.due); {
		w := c.due[i]
		if w.at > c.now {
			i++
			continue
		}
		c.unlist(w) // moves the last one to i
		fire = append(fire, w)
	}
	if fire == nil {
		fire = []*watch{}
	}
	return fire
}
