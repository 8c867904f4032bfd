package batch

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A batch that has started runs until its model returns, but once every
// request in it has been abandoned (Request.Abandoned) nobody waits for
// its outputs: its run's context ends, with ErrAbandoned, so that a model
// that honours it (ort.Session.RunContext) stops and frees its instance.
// One request still waited for keeps the run going: its caller gets the
// outputs. Requests with a Watch are told (hangup.go); for a batch with
// one that must be polled, abandonment is polled, once as the batch
// leaves the queue and every abandonPoll while it runs; batches of
// requests that cannot be abandoned run on a context that never ends,
// with no poller. A batch
// abandoned before it started is not run at all: its requests were
// abandoned in the queue (whose wait polls nothing), and starting each
// such run to stop it at the first poll cost its instance a poll period
// (measured with cmd/hostile's hangup-slow: abandoned runs queued faster
// than one per abandonPoll, so the queue grew and the prep workers' arena
// filled for every model).

// ErrAbandoned is the cause of a run's context ending because every
// request in its batch was abandoned; the batch's requests fail with an
// error wrapping it (nobody reads the answer).
var ErrAbandoned = errors.New("every request in the batch was abandoned: nobody waits for its outputs")

// abandonPoll is how often a running batch asks its requests whether they
// were abandoned: a run stops at most this long (plus the model's time to
// notice) after its last client gave up, and a batch's poll costs a few
// syscalls.
const abandonPoll = 20 * time.Millisecond

// runContext returns the context items' run gets, and the function that
// stops its poller (and waits for it, so no Abandoned is called after it
// returns); call it once the run has returned. The context has already
// ended, with ErrAbandoned, when every item was abandoned before the run.
func runContext(items []*pending) (context.Context, func()) {
	watched := true
	for _, p := range items {
		if !p.canAbandon() {
			return context.Background(), func() {}
		}
		watched = watched && p.watched
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if watched {
		watchRun(items, cancel)
		return ctx, func() { cancel(nil) }
	}
	if allAbandoned(items) {
		cancel(ErrAbandoned)
		return ctx, func() {}
	}
	stop, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(abandonPoll)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if allAbandoned(items) {
				cancel(ErrAbandoned)
				return
			}
		}
	}()
	return ctx, func() {
		close(stop)
		<-exited
		cancel(nil)
	}
}

// allAbandoned reports whether every item's client has given up.
func allAbandoned(items []*pending) bool {
	for _, p := range items {
		if !p.isAbandoned() {
			return false
		}
	}
	return true
}

// canAbandon reports whether p's caller can say it gave up.
func (p *pending) canAbandon() bool { return p.watched || p.abandoned != nil }

// polled reports whether p's abandonment must be polled (Abandoned, no
// Watch).
func (p *pending) polled() bool { return !p.watched && p.abandoned != nil }

// isAbandoned reports whether p's caller gave up: told, or asked now.
func (p *pending) isAbandoned() bool {
	if p.watched {
		return p.gone.Load()
	}
	return p.abandoned != nil && p.abandoned()
}

// A request abandoned while it waits in the queue leaves it as soon as
// its Watch tells (hangup.go), or, polled, within abandonPoll: the loop
// asks every queued request that must be polled each abandonPoll (while
// there is one) and answers those whose client
// has gone with ErrAbandoned, without running them. Waiting for dispatch
// to skip them instead kept each one's caller busy until an instance
// freed, and in an infer worker that is the prep worker's arena slot it
// came in: measured with cmd/hostile's hangup-slow, abandoned requests
// queued behind 5 s runs filled the prep worker's arena and legit
// requests got 503 "arena full". A poll costs one Abandoned call (a
// non-blocking peek) per queued request, and nothing while the queue
// holds none that must be polled: with 1,024 such requests queued the
// polls cost about 8% of a core of a loaded 2-core box, watched ones
// 0.1% (BenchmarkQueuedIdleCPU).

// watched reports whether a queued request must be polled, so that the
// loop polls the queue.
func (q *queue) watched() bool { return q.nWatched > 0 }

// pruneAbandoned removes the queued requests whose client has gone and
// answers each with ErrAbandoned, so that its Submit returns at once. It
// returns how many it removed.
func (q *queue) pruneAbandoned(model string) int {
	var dead []*pending
	for _, g := range q.groups {
		for _, p := range g.items {
			if p.isAbandoned() && p.state.CompareAndSwap(stateQueued, stateDropped) {
				dead = append(dead, p)
			}
		}
	}
	for _, p := range dead {
		q.remove(p)
		answerAbandoned(p, model)
	}
	return len(dead)
}

// answerAbandoned answers p, which left the queue unrun because nobody
// waits for it.
func answerAbandoned(p *pending, model string) {
	p.done <- result{err: fmt.Errorf("model %q: %w: it left the queue unrun", model, ErrAbandoned)}
}
