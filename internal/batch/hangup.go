package batch

import (
	"context"
	"sync"
	"sync/atomic"
)

// A request whose caller can say when it is abandoned (Request.Watch) is
// told, not polled: its callback (abandonedNow) marks it gone and, while
// it queues, hands it to the loop through a list and a wake-up (hangups),
// so it leaves the queue as soon as the hang-up is seen, with no prune
// scan per abandonPoll; once its batch runs, the callback counts it down
// on the batch (runWatch), whose context ends with the last request still
// waited for. Requests whose Watch failed are polled as before
// (abandon.go); the prune ticks only while some of those queue.

// hangups is the loop's in-tray of requests abandoned by an event. The
// callback must not block (it runs on the process's hang-up watcher), so
// it appends under a mutex and wakes the loop with a non-blocking send.
type hangups struct {
	mu   sync.Mutex
	list []*pending
	wake chan struct{} // buffered 1
}

func newHangups() *hangups { return &hangups{wake: make(chan struct{}, 1)} }

// add hands p to the loop.
func (h *hangups) add(p *pending) {
	h.mu.Lock()
	h.list = append(h.list, p)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // a wake-up is already pending; it will take p too
	}
}

// take empties the in-tray.
func (h *hangups) take() []*pending {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.list
	h.list = nil
	return l
}

// watch starts watch (Request.Watch) for p and returns its stop, or nil
// when there is none or it failed (p is then polled, if at all).
func (b *Batcher) watch(p *pending, watch func(func()) (func(), error)) (stop func()) {
	if watch == nil {
		return nil
	}
	stop, err := watch(func() { b.abandonedNow(p) })
	if err != nil {
		return nil
	}
	p.watched = true
	return stop
}

// abandonedNow is p's Request.Watch callback: nobody waits for p. The
// order (mark, then look for its batch, then for its queue) pairs with
// runWatch's (attach, then look at the mark) so that one of the two
// always counts it.
func (b *Batcher) abandonedNow(p *pending) {
	p.gone.Store(true)
	if w := p.run.Load(); w != nil {
		w.count(p)
	}
	if p.state.Load() == stateQueued {
		b.hangups.add(p)
	}
}

// dropHungUp removes from q the requests of the in-tray still queued and
// answers them with ErrAbandoned; a request not queued yet is answered
// when it arrives (admit), one already started is its batch's to count.
func (b *Batcher) dropHungUp(q *queue) int {
	n := 0
	for _, p := range b.hangups.take() {
		if p.inQueue && p.state.CompareAndSwap(stateQueued, stateDropped) {
			q.remove(p)
			answerAbandoned(p, b.md.Name)
			n++
		}
	}
	return n
}

// runWatch is a running batch whose requests all have a Watch: left
// counts those still waited for.
type runWatch struct {
	left   atomic.Int32
	cancel context.CancelCauseFunc
}

// watchRun attaches items to a runWatch that ends ctx, with ErrAbandoned,
// once every one of them is abandoned (at once if they already are).
func watchRun(items []*pending, cancel context.CancelCauseFunc) {
	w := &runWatch{cancel: cancel}
	w.left.Store(int32(len(items)))
	for _, p := range items {
		p.run.Store(w)
	}
	for _, p := range items {
		if p.gone.Load() {
			w.count(p)
		}
	}
}

// count counts p abandoned, once whoever sees it first calls.
func (w *runWatch) count(p *pending) {
	if p.counted.CompareAndSwap(false, true) && w.left.Add(-1) == 0 {
		w.cancel(ErrAbandoned)
	}
}
