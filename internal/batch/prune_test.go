package batch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The watched count follows the queue through push, take and remove, so
// the loop's watched is true exactly while a queued request can be
// abandoned (a full queue of requests that cannot is never polled).
func TestWatchedCountFollowsTheQueue(t *testing.T) {
	q := newQueue()
	now := time.Now()
	never := func() bool { return false }
	a := &pending{key: "a", rank: 1, abandoned: never}
	b := &pending{key: "a", rank: 1}
	c := &pending{key: "c", rank: 1, abandoned: never}
	for _, p := range []*pending{a, b, c} {
		q.push(p, now)
	}
	if q.nWatched != 2 || !q.watched() {
		t.Fatalf("watched %d after queueing two watched requests and one not, want 2", q.nWatched)
	}
	if items, _ := q.take("a", 2); len(items) != 2 || q.nWatched != 1 {
		t.Fatalf("watched %d after taking a watched and an unwatched request (%d taken), want 1", q.nWatched, len(items))
	}
	if !q.remove(c) || q.nWatched != 0 || q.watched() {
		t.Fatalf("watched %d after removing the last watched request, want 0", q.nWatched)
	}
	if q.remove(c) || q.nWatched != 0 {
		t.Fatalf("watched %d after removing a request twice, want 0", q.nWatched)
	}
}

// A request abandoned while Close drains the queue behind a held run
// leaves the queue at the next poll (ErrAbandoned) without being run,
// and Close still returns once the held run does: pruning during a drain
// neither runs the request nor keeps Close waiting for it.
func TestAbandonedDuringCloseLeavesUnrun(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), true)
	first := h.holdFirst(t)
	var gone atomic.Bool
	leaves := rowsReq(2, 1, 2)
	leaves.Abandoned = gone.Load
	leavesOut := submitQueued(t, h, leaves, 1)
	closed := make(chan struct{})
	go func() { h.b.Close(); close(closed) }()
	gone.Store(true)
	h.clk.Advance(abandonPoll)
	if o := wait(t, leavesOut); !errors.Is(o.err, ErrAbandoned) {
		t.Errorf("the request abandoned during Close: err %v, want ErrAbandoned", o.err)
	}
	h.waitDepth(t, 0)
	h.m.gate <- struct{}{}
	checkDoubled(t, rowsReq(1, 1, 2), wait(t, first))
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatal("Close did not return after the held run did")
	}
	if calls, _ := h.m.snapshot(); len(calls) != 1 {
		t.Errorf("%d model calls, want only the first request's", len(calls))
	}
	if s := h.b.Stats(); s.Dropped != 1 {
		t.Errorf("dropped %d, want the abandoned request once", s.Dropped)
	}
}

// A request whose client hangs up and whose context ends at the same
// moment is answered once and counted dropped once, whichever of the poll
// and its Submit sees it first.
func TestAbandonedAndCancelledAtOnceDropOnce(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), true)
	first := h.submit(context.Background(), rowsReq(1, 1, 2))
	h.waitStarted(t)
	const n = 8
	ctx, cancel := context.WithCancel(context.Background())
	outs := make([]<-chan outcome, n)
	for i := range n {
		r := rowsReq(2+i, 1, 2)
		r.Abandoned = func() bool { return true }
		outs[i] = h.submit(ctx, r)
	}
	h.waitDepth(t, n)
	go cancel()
	h.clk.Advance(abandonPoll)
	for i, c := range outs {
		if o := wait(t, c); !errors.Is(o.err, ErrAbandoned) && !errors.Is(o.err, context.Canceled) {
			t.Errorf("request %d: err %v, want ErrAbandoned or context.Canceled", i, o.err)
		}
	}
	h.waitDepth(t, 0)
	h.m.gate <- struct{}{}
	wait(t, first)
	if s := h.b.Stats(); s.Dropped != n {
		t.Errorf("dropped %d, want each of the %d requests once", s.Dropped, n)
	}
	if calls, _ := h.m.snapshot(); len(calls) != 1 {
		t.Errorf("%d model calls, want only the first request's", len(calls))
	}
}
