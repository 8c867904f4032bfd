package prep

import "slices"

// The decode gate's queues: joining, quitting and letting in, all under
// g.mu. A decode is let in by taking its place for it and closing its
// ready channel, so that a place is never free while someone who fits
// waits for it.

// join enters a decode of cost at once when its lane has room and nobody
// waits before it (nil), else queues it and returns its waiter.
func (g *decodeGate) join(cost int64) *gateWaiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case cost <= g.small && len(g.smallQ) == 0 && g.smallIn < g.places:
		g.smallIn++
		return nil
	case cost > g.small && len(g.largeQ) == 0 && g.fitsLarge(cost):
		g.enterLarge(cost)
		return nil
	}
	w := &gateWaiter{cost: cost, ready: make(chan struct{})}
	if cost <= g.small {
		g.smallQ = append(g.smallQ, w)
	} else {
		g.largeQ = append(g.largeQ, w)
	}
	return w
}

// grow takes the large lane's bytes for a caller that must not wait (an
// answer: answerroom.go) from held bytes, which it holds already (0:
// none), to cost bytes: the first bytes when nobody waits for the lane
// (none overtakes a waiting decode), and only when they fit. It takes
// no place: places are the decode threads, and an answer holds its
// bytes while its infer worker runs and its client reads, decoding
// nothing (two unread answers in a lane of two places refused every
// other answer, and queued every large decode, with the lane's bytes
// mostly free). false: it holds what it held, no more. shrink gives
// them back.
func (g *decodeGate) grow(held, cost int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if held == 0 && len(g.largeQ) > 0 || g.largeBytes-held+cost > g.largest() {
		return false
	}
	g.largeBytes += cost - held
	g.burst.Add(cost-held, burstBytes)
	return true
}

// shrink gives back bytes that grow took, and lets in whoever now fits.
func (g *decodeGate) shrink(bytes int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.largeBytes -= bytes
	g.burst.Add(-bytes, burstBytes)
	g.admit()
}

// fitsLarge reports whether a large decode of cost fits beside those
// running.
func (g *decodeGate) fitsLarge(cost int64) bool {
	return g.largeIn < g.places && g.largeBytes+cost <= g.largest()
}

// quit takes w out of its queue when its client has gone. If it was let
// in meanwhile, its place is given back instead.
func (g *decodeGate) quit(w *gateWaiter) {
	g.mu.Lock()
	entered := false
	select {
	case <-w.ready:
		entered = true
	default:
		g.smallQ = slices.DeleteFunc(g.smallQ, func(x *gateWaiter) bool { return x == w })
		g.largeQ = slices.DeleteFunc(g.largeQ, func(x *gateWaiter) bool { return x == w })
		g.admit() // a large decode behind w may fit now
	}
	g.mu.Unlock()
	if entered {
		g.leave(w.cost)
	}
}

// admit lets in, first come first served in each lane, every waiting
// decode that fits: small ones while a small place is free; large ones
// while a place is free and the first in line fits in the large lane's
// bytes (none overtakes it).
func (g *decodeGate) admit() {
	for len(g.smallQ) > 0 && g.smallIn < g.places {
		w := g.smallQ[0]
		g.smallQ = g.smallQ[1:]
		g.smallIn++
		close(w.ready)
	}
	for len(g.largeQ) > 0 && g.fitsLarge(g.largeQ[0].cost) {
		w := g.largeQ[0]
		g.largeQ = g.largeQ[1:]
		g.enterLarge(w.cost)
		close(w.ready)
	}
}

// enterLarge takes a large place and cost bytes of the large lane.
func (g *decodeGate) enterLarge(cost int64) {
	g.largeIn++
	g.largeBytes += cost
	g.burst.Add(cost, burstBytes)
}

// gateState is what the gate holds and queues, for tests and logs.
type gateState struct {
	SmallIn, LargeIn           int
	LargeBytes                 int64
	SmallWaiting, LargeWaiting int
}

func (g *decodeGate) state() gateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return gateState{SmallIn: g.smallIn, LargeIn: g.largeIn, LargeBytes: g.largeBytes,
		SmallWaiting: len(g.smallQ), LargeWaiting: len(g.largeQ)}
}
