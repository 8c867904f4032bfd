package batch

import (
	"fmt"
	"time"
)

// loop owns the queue: it takes in requests, drops cancelled ones, forms
// batches when they are due and instances are free, and arms one timer for
// the next delay expiry. It returns, closing b.stopped, once Close was
// called and nothing is queued or running.
func (b *Batcher) loop() {
	defer close(b.stopped)
	q := newQueue()
	busy, closing, closingc := 0, false, b.closing
	var wakeAt time.Time
	var wakec, prunec <-chan time.Time
	depth := 0
	for {
		select {
		case p := <-b.submitc:
			b.admit(q, p, closing)
		case p := <-b.cancelc:
			if q.remove(p) {
				b.stats.dropped(1)
			}
		case <-b.finishc:
			busy--
		case <-wakec:
			wakeAt, wakec = time.Time{}, nil
		case <-prunec:
			prunec = nil
			b.stats.dropped(q.pruneAbandoned(b.md.Name))
		case <-b.hangups.wake:
			b.stats.dropped(b.dropHungUp(q))
		case <-closingc:
			closing, closingc = true, nil
		}
		b.stats.dropped(q.purge())
		var wake time.Time
		busy, wake = b.dispatch(q, busy, closing)
		if !wake.Equal(wakeAt) {
			wakeAt, wakec = wake, nil
			if !wake.IsZero() {
				wakec = b.clock.After(wake.Sub(b.clock.Now()))
			}
		}
		if prunec == nil && q.watched() {
			prunec = b.clock.After(abandonPoll)
		}
		if q.n != depth {
			depth = q.n
			b.depth.Store(int64(depth))
			if b.observe != nil {
				b.observe(depth)
			}
			if o := b.cfg.Observer; o != nil {
				o.QueueDepthChanged(depth)
			}
		}
		if closing && q.n == 0 && busy == 0 {
			return
		}
	}
}

// admit queues p, or answers it at once when closing or full, or when
// its Watch already told nobody waits.
func (b *Batcher) admit(q *queue, p *pending, closing bool) {
	switch {
	case p.gone.Load() && p.state.CompareAndSwap(stateQueued, stateDropped):
		b.stats.dropped(1)
		answerAbandoned(p, b.md.Name)
	case closing:
		p.done <- result{err: fmt.Errorf("model %q: %w", b.md.Name, ErrClosed)}
	case q.n >= b.cfg.MaxQueueSize:
		b.stats.queueFull()
		p.done <- result{err: fmt.Errorf("model %q: %w (%d requests waiting): retry later", b.md.Name, ErrQueueFull, q.n)}
	default:
		q.push(p, b.clock.Now())
	}
}

// dispatch starts batches while instances are free and some group is due.
// It returns the new busy count and, if an instance is still free, when the
// next group falls due on its own (zero for never).
func (b *Batcher) dispatch(q *queue, busy int, flush bool) (int, time.Time) {
	now := b.clock.Now()
	for busy < b.cfg.Instances {
		key, n, wake := b.pick(q, now, flush)
		if n == 0 {
			return busy, wake
		}
		items, dropped := q.take(key, n)
		b.stats.dropped(dropped)
		if len(items) > 0 {
			busy++
			go b.execute(items, now)
		}
	}
	return busy, time.Time{}
}

// pick chooses, among the groups due now, the one whose first request ranks
// highest, and how many requests to take from it. With none due it returns
// n 0 and the earliest time one falls due.
func (b *Batcher) pick(q *queue, now time.Time, flush bool) (key string, n int, wake time.Time) {
	var best *pending
	for k, g := range q.groups {
		gn, gw := g.plan(&b.cfg, now, flush)
		switch {
		case gn > 0 && (best == nil || g.items[0].before(best)):
			best, key, n = g.items[0], k, gn
		case gn == 0 && (wake.IsZero() || gw.Before(wake)):
			wake = gw
		}
	}
	return key, n, wake
}
