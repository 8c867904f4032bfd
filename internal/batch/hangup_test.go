package batch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// pending is how many timers wait on the clock.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// event is a request's Watch whose hang-up the test fires: it keeps the
// batcher's callback and whether its stop was called. fail makes Watch
// fail; now calls the callback from within Watch (a peer already gone).
type event struct {
	fail, now bool

	mu      sync.Mutex
	onGone  func()
	stopped bool
}

func (e *event) watch(onGone func()) (func(), error) {
	if e.fail {
		return nil, errors.New("this connection cannot be watched")
	}
	e.mu.Lock()
	e.onGone = onGone
	e.mu.Unlock()
	if e.now {
		onGone()
	}
	return func() { e.mu.Lock(); e.stopped = true; e.mu.Unlock() }, nil
}

func (e *event) hangUp() {
	e.mu.Lock()
	f := e.onGone
	e.mu.Unlock()
	f()
}

func (e *event) wasStopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
}

// watchedReq is rowsReq(id, 1, 2) told of its abandonment by e.
func watchedReq(id int, e *event) Request {
	r := rowsReq(id, 1, 2)
	r.Watch = e.watch
	return r
}

// A request told it is abandoned while it waits behind a long run leaves
// the queue at once, with no poll (the fake clock never moves), and its
// Watch is stopped when Submit returns; a queued request still waited
// for stays, and the queue is never polled.
func TestWatchedLeavesTheQueueAtTheHangUp(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), true)
	first := h.holdFirst(t)
	leaving, staying := &event{}, &event{}
	leavesOut := submitQueued(t, h, watchedReq(2, leaving), 1)
	stays := watchedReq(3, staying)
	staysOut := submitQueued(t, h, stays, 2)
	leaving.hangUp()
	if o := wait(t, leavesOut); !errors.Is(o.err, ErrAbandoned) {
		t.Errorf("the request abandoned in the queue: err %v, want ErrAbandoned", o.err)
	}
	if !leaving.wasStopped() {
		t.Error("Submit returned without stopping the request's Watch")
	}
	h.waitDepth(t, 1)
	runFirstThenStays(t, h, first, stays, staysOut)
	if n := h.clk.pending(); n != 0 {
		t.Errorf("%d timers armed on the batcher's clock, want none: watched requests are not polled", n)
	}
}

// A batch whose requests are all watched runs until the last of them is
// abandoned: the first hang-up leaves its context alive, the second ends
// it, with ErrAbandoned, at once.
func TestWatchedRunStopsAtTheLastHangUp(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour}, dynamicMD(), true)
	a, b := &event{}, &event{}
	outs := []<-chan outcome{h.submit(context.Background(), watchedReq(1, a)), h.submit(context.Background(), watchedReq(2, b))}
	h.waitDepth(t, 2)
	h.clk.Advance(hour)
	if rows := h.waitStarted(t); rows != 2 {
		t.Fatalf("batch of %d rows, want both requests (2)", rows)
	}
	h.m.mu.Lock()
	runCtx := h.m.ctx
	h.m.mu.Unlock()
	a.hangUp()
	if err := runCtx.Err(); err != nil {
		t.Fatalf("one request of two abandoned: the run's context ended (%v), want it to go on", err)
	}
	b.hangUp()
	if !errors.Is(context.Cause(runCtx), ErrAbandoned) {
		t.Fatalf("both abandoned: the run's context's cause is %v, want ErrAbandoned at once", context.Cause(runCtx))
	}
	for i, c := range outs {
		if o := wait(t, c); !errors.Is(o.err, ErrAbandoned) {
			t.Errorf("request %d: err %v, want ErrAbandoned", i+1, o.err)
		}
	}
}

// A request whose client is gone before it is even queued (its Watch
// calls back at once) is answered ErrAbandoned and never run.
func TestWatchedGoneBeforeQueued(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), false)
	if o := wait(t, h.submit(context.Background(), watchedReq(1, &event{now: true}))); !errors.Is(o.err, ErrAbandoned) {
		t.Errorf("err %v, want ErrAbandoned", o.err)
	}
	checkDoubled(t, rowsReq(2, 1, 2), wait(t, h.submit(context.Background(), rowsReq(2, 1, 2))))
	if calls, _ := h.m.snapshot(); len(calls) != 1 {
		t.Errorf("model calls %v, want only the second request's", calls)
	}
}

// A request whose Watch fails is polled through Abandoned, as one with
// no Watch: it leaves the queue at the next poll, and a batch mixing it
// with a watched request ends once both are abandoned.
func TestWatchFailureFallsBackToPolling(t *testing.T) {
	h := newHarness(t, Config{}, dynamicMD(), true)
	first := h.submit(context.Background(), rowsReq(1, 1, 2))
	h.waitStarted(t)
	polled := &client{id: 2, counting: new(atomic.Bool), asked: new(atomic.Int32)}
	r := watchedReq(2, &event{fail: true})
	r.Abandoned = polled.abandoned
	out := submitQueued(t, h, r, 1)
	polled.gone.Store(true)
	h.clk.Advance(abandonPoll)
	if o := wait(t, out); !errors.Is(o.err, ErrAbandoned) {
		t.Errorf("the polled request abandoned in the queue: err %v, want ErrAbandoned", o.err)
	}
	h.m.gate <- struct{}{}
	checkDoubled(t, rowsReq(1, 1, 2), wait(t, first))
}

// Hang-ups racing with queuing, dispatch and runs: every Submit returns,
// with its outputs or ErrAbandoned, and every Watch is stopped. Run it
// with -race.
func TestWatchedHangUpsRaceTheLoop(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 4, MaxQueueDelay: 0, Instances: 2}, dynamicMD(), false)
	const n = 200
	events := make([]*event, n)
	outs := make([]<-chan outcome, n)
	for i := range n {
		events[i] = &event{}
		outs[i] = h.submit(context.Background(), watchedReq(i+1, events[i]))
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i += 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := events[i]
			polltest.Wait(waitLimit, 100*time.Microsecond, func() bool {
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.onGone != nil
			})
			e.hangUp()
		}()
	}
	abandoned := 0
	for i, c := range outs {
		o := wait(t, c)
		switch {
		case i%2 == 0 && errors.Is(o.err, ErrAbandoned):
			abandoned++
		case i%2 == 0 && o.err != nil:
			t.Errorf("request %d, which hung up: %v, want outputs or ErrAbandoned", i+1, o.err)
		default: // answered; the odd ones never hung up and must be
			checkDoubled(t, rowsReq(i+1, 1, 2), o)
		}
		if !events[i].wasStopped() {
			t.Errorf("request %d: Submit returned without stopping its Watch", i+1)
		}
	}
	wg.Wait()
	t.Logf("%d of the %d that hung up were abandoned, the rest answered first", abandoned, n/2)
}
