package batch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// client is a request's side of Request.Abandoned: whether it gave up.
// Once counting is set, asked counts the batch's questions to every client.
type client struct {
	id       int
	gone     atomic.Bool
	counting *atomic.Bool
	asked    *atomic.Int32
}

func (c *client) abandoned() bool {
	if c.counting.Load() {
		c.asked.Add(1)
	}
	return c.gone.Load()
}

// A started batch's run goes on while one of its requests is still waited
// for, and its context ends with ErrAbandoned once every request has been
// abandoned; both callers get an error wrapping it.
func TestRunStopsWhenEveryRequestIsAbandoned(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour}, dynamicMD(), true)
	var counting atomic.Bool
	var asked atomic.Int32
	a, b := &client{id: 1, counting: &counting, asked: &asked}, &client{id: 2, counting: &counting, asked: &asked}
	var outs []<-chan outcome
	for _, c := range []*client{a, b} {
		r := rowsReq(c.id, 1, 2)
		r.Abandoned = c.abandoned
		outs = append(outs, h.submit(context.Background(), r))
	}
	h.waitDepth(t, 2)
	h.clk.Advance(hour)
	if rows := h.waitStarted(t); rows != 2 {
		t.Fatalf("batch of %d rows, want both requests (2)", rows)
	}
	a.gone.Store(true)
	counting.Store(true)
	// Three questions since (one or two a poll): a whole poll has run
	// with a abandoned.
	polltest.Until(t, waitLimit, time.Millisecond, "the batch to poll its requests after one was abandoned",
		func() bool { return asked.Load() >= 3 })
	h.m.mu.Lock()
	runCtx := h.m.ctx
	h.m.mu.Unlock()
	if err := runCtx.Err(); err != nil {
		t.Fatalf("one request of two abandoned: the run's context ended (%v), want it to go on", err)
	}
	b.gone.Store(true)
	for i, c := range outs {
		if o := wait(t, c); !errors.Is(o.err, ErrAbandoned) {
			t.Errorf("request %d: err %v, want ErrAbandoned", i+1, o.err)
		}
	}
}

// A batch with a request that cannot be abandoned runs on a context that
// never ends: no poller, and no terminate options in ORT.
func TestRunWithoutAbandonedNeverEnds(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), false)
	checkDoubled(t, rowsReq(1, 1, 2), wait(t, h.submit(context.Background(), rowsReq(1, 1, 2))))
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.m.ctx.Done() != nil {
		t.Fatal("a batch whose request has no Abandoned got a context that can end")
	}
}

// BenchmarkRunContext is what watching a batch of 8 requests for
// abandonment costs a run that ends before the first poll.
func BenchmarkRunContext(b *testing.B) {
	items := make([]*pending, 8)
	for i := range items {
		items[i] = &pending{abandoned: func() bool { return false }}
	}
	for b.Loop() {
		_, stop := runContext(items)
		stop()
	}
}

// A request abandoned while it queued is not run when its turn comes: it
// fails with ErrAbandoned and the next request runs, with no model call
// for it, so abandoned requests leave a queue as fast as it is served.
func TestAbandonedInTheQueueIsNotRun(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), true)
	first := h.holdFirst(t)
	gone := rowsReq(2, 1, 2)
	gone.Abandoned = func() bool { return true }
	goneOut := submitQueued(t, h, gone, 1)
	stays := rowsReq(3, 1, 2)
	stays.Abandoned = func() bool { return false }
	staysOut := submitQueued(t, h, stays, 2)
	runFirstThenStays(t, h, first, stays, staysOut)
	if o := wait(t, goneOut); !errors.Is(o.err, ErrAbandoned) {
		t.Errorf("the request abandoned in the queue: err %v, want ErrAbandoned", o.err)
	}
}

// A request abandoned while it waits behind a long run leaves the queue
// at the next poll, answered with ErrAbandoned, while the run still holds
// the only instance: its caller (an infer worker holding a prep worker's
// arena slot) is free within abandonPoll, not when an instance frees. A
// queued request still waited for stays.
func TestAbandonedLeavesTheQueueWithinAPoll(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), true)
	first := h.holdFirst(t)
	var gone atomic.Bool
	leaves := rowsReq(2, 1, 2)
	leaves.Abandoned = gone.Load
	leavesOut := submitQueued(t, h, leaves, 1)
	stays := rowsReq(3, 1, 2)
	stays.Abandoned = func() bool { return false }
	staysOut := submitQueued(t, h, stays, 2)
	gone.Store(true)
	h.clk.Advance(abandonPoll)
	if o := wait(t, leavesOut); !errors.Is(o.err, ErrAbandoned) {
		t.Errorf("the request abandoned in the queue: err %v, want ErrAbandoned", o.err)
	}
	h.waitDepth(t, 1)
	select {
	case o := <-staysOut:
		t.Fatalf("the request still waited for returned (%v) while the first run held the instance", o.err)
	default:
	}
	runFirstThenStays(t, h, first, stays, staysOut)
}

// runFirstThenStays lets the held first run (request 1) return, then
// wants the next run to be stays (request 3) alone, and the model to have
// run only those two: no abandoned request ran.
func runFirstThenStays(t *testing.T, h *harness, first <-chan outcome, stays Request, staysOut <-chan outcome) {
	t.Helper()
	h.m.gate <- struct{}{} // the first run returns
	checkDoubled(t, rowsReq(1, 1, 2), wait(t, first))
	if rows := h.waitStarted(t); rows != 1 {
		t.Fatalf("next run of %d rows, want the request still waited for (1)", rows)
	}
	h.m.gate <- struct{}{}
	checkDoubled(t, stays, wait(t, staysOut))
	if calls, _ := h.m.snapshot(); len(calls) != 2 || calls[1][0] != 3000 {
		t.Errorf("model calls %v, want the first request's and the third's (3000...), none for the abandoned one", calls)
	}
}

// BenchmarkPruneQueue is one poll by the loop of a queue of 64 requests
// (one prep worker's arena slots), none abandoned, without the Abandoned
// calls themselves (one non-blocking peek each in an infer worker, about
// 2.5 µs: hangup's BenchmarkPeerClosed): the loop's own cost every
// abandonPoll (about 0.3 µs; with the peeks, 64 queued requests cost under
// 1% of a core).
func BenchmarkPruneQueue(b *testing.B) {
	q := newQueue()
	now := time.Now()
	for range 64 {
		q.push(&pending{key: "k", rank: 1, done: make(chan result, 1), abandoned: func() bool { return false }}, now)
	}
	for b.Loop() {
		if !q.watched() || q.pruneAbandoned("m") != 0 {
			b.Fatal("a queue of requests still waited for was not watched, or lost one")
		}
	}
}
