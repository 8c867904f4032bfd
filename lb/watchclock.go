package lb

import (
	"sync"
	"sync/atomic"
	"time"
)

// watchClock is when each watch looks at its client next, on one runtime
// timer for all of them.
//
// A timer per request (time.AfterFunc at the exchange's start, stopped
// at its end; almost never firing, as most answers come within
// watchDelay) is cheap to arm, but arming a timer earlier than the one
// the runtime's network poller sleeps towards wakes the poller (an
// eventfd write and futex wake-ups): at one connection that was about a
// third of a write and 1.4 futex calls more per request than the bare
// fasthttp proxy made (perf stat, cmd/proxyfloor, mlp). Here the clock's
// one timer is armed for the earliest watch listed and is only moved
// earlier, never at each request: it fires at most once per watchDelay
// while watches are listed, finds the ones due, and is re-armed for the
// next. A ticker instead (tried) woke the process every tick even when
// nothing was due, which an idle Go process pays 90-150 us of CPU for on
// this VM.
//
// Lock order: a watch's mu, then the clock's.
type watchClock struct {
	mu    sync.Mutex
	due   []*watch      // in no order; a watch's index is its place
	timer *time.Timer   // fires the clock; nil until first armed
	armed time.Duration // when timer fires (since epoch); 0: not armed
	fires atomic.Int64  // times the timer fired (tests)
}

// watchSlack is the least time between two fires: watches due within
// it of each other are acted on together, at most watchSlack late.
// Polled watches come due at moments of their own (every ClientPoll from
// their own start); the slack bounds the fires, each a look over every
// listed watch, to about one a millisecond however many there are,
// rather than leaving it to how closely the runtime runs timers (2,000
// polled watches over 100 ms: 75 fires with it, 102 without, here;
// TestManyPolledWatchesFireTheClockBoundedly).
const watchSlack = time.Millisecond

// watches is the lb's watch clock, shared by every Proxy.
var watches watchClock

// epoch is what the clock counts from, on the monotonic clock.
var epoch = time.Now()

// add lists w to act d from now.
func (c *watchClock) add(w *watch, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Since(epoch)
	w.at = now + d
	w.index = len(c.due)
	c.due = append(c.due, w)
	if c.armed == 0 || w.at < c.armed {
		c.arm(now, w.at)
	}
}

// arm sets the timer to fire at at. Under mu.
func (c *watchClock) arm(now, at time.Duration) {
	c.armed = at
	if c.timer == nil {
		c.timer = time.AfterFunc(at-now, c.fire)
		return
	}
	c.timer.Reset(at - now)
}

// remove unlists w, if listed. The timer stays armed: stopping it when
// the list empties would re-arm it, waking the poller, at the next
// request.
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

// fire runs on the timer: it unlists the watches due and acts on them,
// after re-arming for the earliest one left.
func (c *watchClock) fire() {
	c.fires.Add(1)
	var fire []*watch
	c.mu.Lock()
	now := time.Since(epoch)
	c.armed = 0
	var next time.Duration
	for i := 0; i < len(c.due); {
		w := c.due[i]
		if w.at > now {
			if next == 0 || w.at < next {
				next = w.at
			}
			i++
			continue
		}
		c.unlist(w) // moves the last one to i
		fire = append(fire, w)
	}
	if next != 0 {
		c.arm(now, max(next, now+watchSlack))
	}
	c.mu.Unlock()
	for _, w := range fire {
		w.tick() // may list w again (a poll), arming the timer earlier
	}
}
