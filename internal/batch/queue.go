package batch

import (
	"slices"
	"time"
)

// queue holds the waiting requests, one group per shape key. It belongs to
// the loop goroutine.
type queue struct {
	groups map[string]*group
	n      int    // requests queued, over all groups
	seq    uint64 // arrival counter
	// nWatched counts the queued requests whose abandonment is polled,
	// so that watched costs nothing per loop turn, even with a full queue.
	nWatched int
}

// group is one shape key's requests, sorted by (priority, arrival). Queues
// are bounded (MaxQueueSize), so a sorted slice beats a heap on simplicity
// at no real cost.
type group struct {
	items []*pending
}

func newQueue() *queue { return &queue{groups: make(map[string]*group)} }

// push queues p, stamped with its arrival.
func (q *queue) push(p *pending, now time.Time) {
	q.seq++
	p.seq, p.enqueued, p.inQueue = q.seq, now, true
	g := q.groups[p.key]
	if g == nil {
		g = &group{}
		q.groups[p.key] = g
	}
	i, _ := slices.BinarySearchFunc(g.items, p, func(a, b *pending) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	g.items = slices.Insert(g.items, i, p)
	q.n++
	q.count(p, 1)
}

// count adds d to the watched count if p's abandonment is polled.
func (q *queue) count(p *pending, d int) {
	if p.polled() {
		q.nWatched += d
	}
}

// remove takes p out of the queue; it is a no-op for a request that has
// already left it.
func (q *queue) remove(p *pending) bool {
	if !p.inQueue {
		return false
	}
	g := q.groups[p.key]
	if i := slices.Index(g.items, p); i >= 0 {
		g.items = slices.Delete(g.items, i, i+1)
	}
	p.inQueue = false
	q.n--
	q.count(p, -1)
	if len(g.items) == 0 {
		delete(q.groups, p.key)
	}
	return true
}

// purge removes the requests that must not run any more: dropped by their
// caller, or whose context has ended. It returns how many it removed.
func (q *queue) purge() int {
	var dead []*pending
	for _, g := range q.groups {
		for _, p := range g.items {
			if p.state.Load() == stateDropped ||
				(p.ctx.Err() != nil && p.state.CompareAndSwap(stateQueued, stateDropped)) {
				dead = append(dead, p)
			}
		}
	}
	for _, p := range dead {
		q.remove(p)
	}
	return len(dead)
}

// take removes g's first n requests and marks them started. A request its
// caller dropped meanwhile is left out, so the batch may come out smaller;
// dropped counts those.
func (q *queue) take(key string, n int) (batch []*pending, dropped int) {
	g := q.groups[key]
	batch = make([]*pending, 0, n)
	for _, p := range g.items[:n] {
		p.inQueue = false
		q.count(p, -1)
		if p.state.CompareAndSwap(stateQueued, stateStarted) {
			batch = append(batch, p)
		}
	}
	g.items = slices.Delete(g.items, 0, n)
	q.n -= n
	if len(g.items) == 0 {
		delete(q.groups, key)
	}
	return batch, n - len(batch)
}

// plan decides what g would dispatch now: its first n requests, or, with n
// 0, nothing until wake, when its oldest request has waited the delay.
// flush dispatches whatever is queued, for Close. A request to run alone
// (Request.Alone) is a batch of its own, due at once; the requests before
// it are as full a batch as they will get (nothing joins them past it), so
// they are due at once too.
func (g *group) plan(c *Config, now time.Time, flush bool) (n int, wake time.Time) {
	if c.MaxBatchSize == 0 {
		return 1, time.Time{}
	}
	rows, pref := 0, 0
	for i, p := range g.items {
		if p.alone {
			return max(i, 1), time.Time{}
		}
		if rows+p.rows > c.MaxBatchSize {
			return i, time.Time{} // full: requests are never reordered to fit
		}
		rows += p.rows
		if rows == c.MaxBatchSize {
			return i + 1, time.Time{}
		}
		if c.preferred(rows) {
			pref = i + 1
		}
	}
	if pref > 0 {
		return pref, time.Time{}
	}
	wake = g.oldest().Add(c.MaxQueueDelay)
	if flush || !now.Before(wake) {
		return len(g.items), time.Time{}
	}
	return 0, wake
}

// oldest is the arrival time of g's longest-waiting request.
func (g *group) oldest() time.Time {
	t := g.items[0].enqueued
	for _, p := range g.items[1:] {
		if p.enqueued.Before(t) {
			t = p.enqueued
		}
	}
	return t
}
