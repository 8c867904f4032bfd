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
// outputs. Abandonment is polled, once as the batch leaves the queue and
// every abandonPoll while it runs, because what tells it (a peer's closed
// connection) has no event to wait on; batches of requests that cannot be
// abandoned run on a context that never ends, with no poller. A batch
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
	for _, p := range items {
		if p.abandoned == nil {
			return context.Background(), func() {}
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
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
		if !p.abandoned() {
			return false
		}
	}
	return true
}

// A request abandoned while it waits in the queue leaves it within
// abandonPoll: the loop asks every queued request that can be abandoned
// each abandonPoll (while there is one) and answers those whose client
// has gone with ErrAbandoned, without running them. Waiting for dispatch
// to skip them instead kept each one's caller busy until an instance
// freed, and in an infer worker that is the prep worker's arena slot it
// came in: measured with cmd/hostile's hangup-slow, abandoned requests
// queued behind 5 s runs filled the prep worker's arena and legit
// requests got 503 "arena full". A poll costs one Abandoned call (a
// non-blocking peek) per watched queued request, and nothing while the
// queue holds none.

// watched reports whether a queued request can be abandoned, so that the
// loop polls the queue.
func (q *queue) watched() bool { return q.nWatched > 0 }

// pruneAbandoned removes the queued requests whose client has gone and
// answers each with ErrAbandoned, so that its Submit returns at once. It
// returns how many it removed.
func (q *queue) pruneAbandoned(model string) int {
	var dead []*pending
	for _, g := range q.groups {
		for _, p := range g.items {
			if p.abandoned != nil && p.abandoned() && p.state.CompareAndSwap(stateQueued, stateDropped) {
				dead = append(dead, p)
			}
		}
	}
	for _, p := range dead {
		q.remove(p)
		p.done <- result{err: fmt.Errorf("model %q: %w: it left the queue unrun", model, ErrAbandoned)}
	}
	return len(dead)
}
