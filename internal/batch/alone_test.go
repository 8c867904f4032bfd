package batch

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// aloneReq is rowsReq(id, 1, 1) marked to run alone.
func aloneReq(id int) Request {
	r := rowsReq(id, 1, 1)
	r.Alone = true
	return r
}

// submitQueued submits r and waits until the queue holds depth requests.
func submitQueued(t *testing.T, h *harness, r Request, depth int) <-chan outcome {
	t.Helper()
	o := h.submit(context.Background(), r)
	h.waitDepth(t, depth)
	return o
}

// batchesRan returns the request ids of each model call, in call order.
func batchesRan(h *harness) [][]int {
	calls, _ := h.m.snapshot()
	out := make([][]int, len(calls))
	for i, c := range calls {
		out[i] = ids(c)
	}
	return out
}

// TestAloneRunsInABatchOfItsOwn: 1 and 2 wait for company (an hour's
// delay) when 3 arrives marked alone: 1 and 2 run at once without it (the
// clock never moves), 3 runs next on its own though 4 and 5, of the same
// shape, queue behind it meanwhile, and 4 and 5 then batch as usual.
func TestAloneRunsInABatchOfItsOwn(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour}, dynamicMD(), true)
	reqs := []Request{rowsReq(1, 1, 1), rowsReq(2, 1, 1), aloneReq(3), rowsReq(4, 1, 1), rowsReq(5, 1, 1)}
	outs := []<-chan outcome{submitQueued(t, h, reqs[0], 1), submitQueued(t, h, reqs[1], 2)}
	outs = append(outs, submitQueued(t, h, reqs[2], 1)) // 1 and 2 left the queue
	if n := h.waitStarted(t); n != 2 {
		t.Fatalf("the requests before the alone one ran as %d rows, want 2, without waiting for the delay", n)
	}
	outs = append(outs, submitQueued(t, h, reqs[3], 2), submitQueued(t, h, reqs[4], 3))
	h.m.gate <- struct{}{}
	if n := h.waitStarted(t); n != 1 {
		t.Fatalf("the alone request ran in a batch of %d rows, want 1", n)
	}
	h.m.gate <- struct{}{}
	h.clk.Advance(hour)
	if n := h.waitStarted(t); n != 2 {
		t.Fatalf("the requests after the alone one ran as %d rows, want 2", n)
	}
	h.m.gate <- struct{}{}
	for i, o := range outs {
		checkDoubled(t, reqs[i], wait(t, o))
	}
	if got, want := batchesRan(h), [][]int{{1, 2}, {3}, {4, 5}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// TestAloneRequestsKeepTheirOrder: with the only instance busy, alone
// requests and ordinary ones queue in arrival order; each alone request
// runs by itself, the ordinary ones between them batch together, and
// nothing overtakes anything.
func TestAloneRequestsKeepTheirOrder(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 2, MaxQueueDelay: hour}, dynamicMD(), true)
	held := holdInstance(t, h, 2)
	reqs := []Request{aloneReq(1), aloneReq(2), rowsReq(3, 1, 1), rowsReq(4, 1, 1), aloneReq(5), rowsReq(6, 1, 1)}
	var outs []<-chan outcome
	for i, r := range reqs {
		outs = append(outs, submitQueued(t, h, r, i+1))
	}
	for i, want := range []int{1, 1, 2, 1} { // after the held batch: 1, 2, 3+4, 5
		h.m.gate <- struct{}{}
		if n := h.waitStarted(t); n != want {
			t.Fatalf("batch %d after the held one ran %d rows, want %d", i+1, n, want)
		}
	}
	h.m.gate <- struct{}{}
	h.clk.Advance(hour) // 6 waits for company
	if n := h.waitStarted(t); n != 1 {
		t.Fatalf("the last batch ran %d rows, want 1", n)
	}
	h.m.gate <- struct{}{}
	wait(t, held)
	for i, o := range outs {
		checkDoubled(t, reqs[i], wait(t, o))
	}
	got := batchesRan(h)[1:]
	if want := [][]int{{1}, {2}, {3, 4}, {5}, {6}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// TestAloneHungUpInTheQueue: an alone request abandoned while it queues
// (its Watch tells) leaves the queue, and the ordinary requests on
// either side of it, no longer parted, run as one batch.
func TestAloneHungUpInTheQueue(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 2, MaxQueueDelay: hour}, dynamicMD(), true)
	held := holdInstance(t, h, 2)
	gone := &event{}
	alone := aloneReq(2)
	alone.Watch = gone.watch
	reqs := []Request{rowsReq(1, 1, 1), alone, rowsReq(3, 1, 1)}
	var outs []<-chan outcome
	for i, r := range reqs {
		outs = append(outs, submitQueued(t, h, r, i+1))
	}
	gone.hangUp()
	if o := wait(t, outs[1]); !errors.Is(o.err, ErrAbandoned) {
		t.Fatalf("the alone request hung up in the queue: err %v, want ErrAbandoned", o.err)
	}
	h.waitDepth(t, 2)
	h.m.gate <- struct{}{}
	if n := h.waitStarted(t); n != 2 {
		t.Fatalf("after the held batch: %d rows, want 1 and 3 together (2)", n)
	}
	h.m.gate <- struct{}{}
	wait(t, held)
	checkDoubled(t, reqs[0], wait(t, outs[0]))
	checkDoubled(t, reqs[2], wait(t, outs[2]))
	if got, want := batchesRan(h)[1:], [][]int{{1, 3}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// TestRunningIsToldEachBatch: Config.Running gets each batch's request
// IDs and whether it is an alone one as it starts, and its done is
// called after the run and before the requests are answered.
func TestRunningIsToldEachBatch(t *testing.T) {
	type told struct {
		run  Run
		done chan struct{}
	}
	runs := make(chan told, 8)
	cfg := Config{MaxBatchSize: 8, MaxQueueDelay: hour, PreferredBatchSizes: []int{2}}
	cfg.Running = func(r Run) func() {
		tl := told{r, make(chan struct{})}
		runs <- tl
		return func() { close(tl.done) }
	}
	h := newHarness(t, cfg, dynamicMD(), true)
	withID := func(r Request, id uint64) Request { r.ID = id; return r }
	a, b := withID(rowsReq(1, 1, 1), 11), withID(rowsReq(2, 1, 1), 12)
	outs := []<-chan outcome{h.submit(context.Background(), a), h.submit(context.Background(), b)}
	h.waitStarted(t)
	tl := <-runs
	if !slices.Equal(slices.Sorted(slices.Values(tl.run.IDs)), []uint64{11, 12}) || tl.run.Alone {
		t.Fatalf("Running told %+v, want IDs [11 12], not alone", tl.run)
	}
	select {
	case <-tl.done:
		t.Fatal("done was called while the batch runs")
	default:
	}
	h.m.gate <- struct{}{}
	for i, o := range outs {
		got := wait(t, o)
		select {
		case <-tl.done:
		default:
			t.Fatal("a request was answered before done was called")
		}
		checkDoubled(t, []Request{a, b}[i], got)
	}
	c := withID(aloneReq(3), 13)
	out := h.submit(context.Background(), c)
	h.waitStarted(t)
	if tl := <-runs; !slices.Equal(tl.run.IDs, []uint64{13}) || !tl.run.Alone {
		t.Fatalf("Running told %+v for the alone request, want IDs [13], alone", tl.run)
	}
	h.m.gate <- struct{}{}
	checkDoubled(t, c, wait(t, out))
}
