package batch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

const hour = time.Hour // a delay no test waits out on its own

func TestConcatenatesAndSplitsExactly(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour}, dynamicMD(), false)
	reqs := []Request{rowsReq(1, 1, 2), rowsReq(2, 2, 2), rowsReq(3, 3, 2)}
	var outs []<-chan outcome
	for _, r := range reqs {
		outs = append(outs, h.submit(context.Background(), r))
	}
	h.waitDepth(t, 3)
	h.clk.Advance(hour)
	for i, r := range reqs {
		checkDoubled(t, r, wait(t, outs[i]))
	}
	calls, shapes := h.m.snapshot()
	if len(calls) != 1 || shapes[0][0] != 6 {
		t.Fatalf("calls with shapes %v, want one of 6 rows", shapes)
	}
	got := ids(calls[0])
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("batch held requests %v, want 1, 2 and 3", got)
	}
	s := h.b.Stats()
	if len(s.BatchStats) != 1 || s.BatchStats[0].BatchSize != 6 || s.BatchStats[0].ComputeInfer.Count != 1 {
		t.Errorf("batch stats %+v, want one batch of 6", s.BatchStats)
	}
	if s.InferenceStats.Success.Count != 3 || s.InferenceStats.Queue.Count != 3 || s.InferenceCount != 6 || s.ExecutionCount != 1 {
		t.Errorf("stats %+v, want 3 successes, 6 rows, 1 execution", s)
	}
}

func TestNeverMixesShapes(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour}, dynamicMD(), false)
	reqs := []Request{rowsReq(1, 1, 2), rowsReq(2, 1, 3), rowsReq(3, 2, 2), rowsReq(4, 1, 3)}
	var outs []<-chan outcome
	for _, r := range reqs {
		outs = append(outs, h.submit(context.Background(), r))
	}
	h.waitDepth(t, 4)
	h.clk.Advance(hour)
	for i, r := range reqs {
		checkDoubled(t, r, wait(t, outs[i]))
	}
	calls, shapes := h.m.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2 (one per shape)", len(calls))
	}
	want := map[int64][]int{2: {1, 3}, 3: {2, 4}} // columns → request ids
	for i, c := range calls {
		got := ids(c)
		slices.Sort(got)
		if !slices.Equal(got, want[shapes[i][1]]) {
			t.Errorf("batch of shape %v held requests %v, want %v", shapes[i], got, want[shapes[i][1]])
		}
	}
}

func TestFullBatchDispatchesWithoutDelay(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 4, MaxQueueDelay: hour}, dynamicMD(), false)
	var outs []<-chan outcome
	for id := range 4 {
		outs = append(outs, h.submit(context.Background(), rowsReq(id, 1, 2)))
	}
	for i := range outs {
		checkDoubled(t, rowsReq(i, 1, 2), wait(t, outs[i])) // the clock never moved
	}
	if _, shapes := h.m.snapshot(); len(shapes) != 1 || shapes[0][0] != 4 {
		t.Errorf("calls %v, want one of 4 rows", shapes)
	}
}

func TestBatchThatCannotGrowDispatches(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 4, MaxQueueDelay: hour}, dynamicMD(), false)
	first := h.submit(context.Background(), rowsReq(1, 3, 2))
	h.waitDepth(t, 1)
	second := h.submit(context.Background(), rowsReq(2, 2, 2)) // 3+2 > 4
	// Only the second's arrival dispatches the first, so once the first is
	// answered the second is queued, waiting for company.
	checkDoubled(t, rowsReq(1, 3, 2), wait(t, first))
	h.clk.Advance(hour)
	checkDoubled(t, rowsReq(2, 2, 2), wait(t, second))
	if _, shapes := h.m.snapshot(); len(shapes) != 2 || shapes[0][0] != 3 || shapes[1][0] != 2 {
		t.Errorf("calls %v, want batches of 3 then 2 rows", shapes)
	}
}

func TestDelayDispatchesPartialBatch(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour}, dynamicMD(), false)
	a := h.submit(context.Background(), rowsReq(1, 1, 2))
	b := h.submit(context.Background(), rowsReq(2, 1, 2))
	h.waitDepth(t, 2)
	select {
	case n := <-h.m.started:
		t.Fatalf("a batch of %d started before the delay", n)
	default:
	}
	h.clk.Advance(hour - time.Nanosecond)
	h.clk.Advance(time.Nanosecond)
	if n := h.waitStarted(t); n != 2 {
		t.Errorf("partial batch of %d rows, want 2", n)
	}
	wait(t, a)
	wait(t, b)
}

func TestPreferredBatchSizes(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour, PreferredBatchSizes: []int{4, 2}}, dynamicMD(), true)
	var outs []<-chan outcome
	outs = append(outs, h.submit(context.Background(), rowsReq(0, 8, 1)))
	if n := h.waitStarted(t); n != 8 {
		t.Fatalf("first batch %d rows, want 8", n)
	}
	for id := 1; id <= 5; id++ {
		outs = append(outs, h.submit(context.Background(), rowsReq(id, 1, 1)))
	}
	h.waitDepth(t, 5)
	h.m.gate <- struct{}{}
	if n := h.waitStarted(t); n != 4 {
		t.Fatalf("with 5 rows queued, dispatched %d, want the largest preferred size 4", n)
	}
	h.m.gate <- struct{}{}
	h.waitDepth(t, 1)
	h.clk.Advance(hour)
	if n := h.waitStarted(t); n != 1 {
		t.Fatalf("after the delay, dispatched %d, want the 1 left", n)
	}
	h.m.gate <- struct{}{}
	for _, o := range outs {
		if r := wait(t, o); r.err != nil {
			t.Fatal(r.err)
		}
	}
}

// holdInstance fills the only instance of a gated harness with a batch.
func holdInstance(t *testing.T, h *harness, rows int) <-chan outcome {
	t.Helper()
	o := h.submit(context.Background(), rowsReq(999, rows, 1))
	h.waitStarted(t)
	return o
}

func TestQueueFullFailsAtOnce(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour, MaxQueueSize: 2}, dynamicMD(), true)
	holdInstance(t, h, 8)
	h.submit(context.Background(), rowsReq(1, 1, 1))
	h.submit(context.Background(), rowsReq(2, 1, 1))
	h.waitDepth(t, 2)
	_, err := h.b.Submit(context.Background(), rowsReq(3, 1, 1))
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Submit on a full queue: %v, want ErrQueueFull", err)
	}
	if s := h.b.Stats(); s.QueueFull != 1 || s.QueueDepth != 2 || s.InferenceStats.Fail.Count != 1 {
		t.Errorf("stats %+v, want 1 queue-full failure and depth 2", s)
	}
}

func TestCancelledAndExpiredRequestsNeverRun(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8}, dynamicMD(), true)
	held := holdInstance(t, h, 8)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := h.submit(ctx, rowsReq(1, 1, 1))
	late := rowsReq(2, 1, 1)
	late.Deadline = time.Now().Add(20 * time.Millisecond)
	expired := h.submit(context.Background(), late)
	h.waitDepth(t, 2)
	cancel()
	if o := wait(t, cancelled); !errors.Is(o.err, context.Canceled) {
		t.Errorf("cancelled request: %v, want context.Canceled", o.err)
	}
	if o := wait(t, expired); !errors.Is(o.err, ErrTimeout) {
		t.Errorf("expired request: %v, want ErrTimeout", o.err)
	}
	h.waitDepth(t, 0)
	h.m.gate <- struct{}{}
	wait(t, held)
	h.b.Close()
	calls, _ := h.m.snapshot()
	for _, c := range calls {
		if got := ids(c); slices.Contains(got, 1) || slices.Contains(got, 2) {
			t.Errorf("a dropped request ran, in a batch of requests %v", got)
		}
	}
	if s := h.b.Stats(); s.Dropped != 2 {
		t.Errorf("dropped %d, want 2", s.Dropped)
	}
}

func TestPastDeadlineIsRefused(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8}, dynamicMD(), false)
	r := rowsReq(1, 1, 1)
	r.Deadline = time.Now().Add(-time.Second)
	if _, err := h.b.Submit(context.Background(), r); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Submit past its deadline: %v, want ErrTimeout", err)
	}
}

func TestPriorityOrdersTheQueue(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 1}, dynamicMD(), true)
	holdInstance(t, h, 1)
	prio := map[int]int{10: 0, 11: 3, 12: 1, 13: 2}
	for id := 10; id <= 13; id++ {
		r := rowsReq(id, 1, 1)
		r.Priority = prio[id]
		h.submit(context.Background(), r)
	}
	h.waitDepth(t, 4)
	r := rowsReq(14, 1, 1) // same priority as 12, arrives later
	r.Priority = 1
	h.submit(context.Background(), r)
	h.waitDepth(t, 5)
	for range 6 {
		h.m.gate <- struct{}{}
	}
	h.waitDepth(t, 0)
	calls, _ := h.m.snapshot()
	var order []int
	for _, c := range calls[1:] {
		order = append(order, ids(c)...)
	}
	if want := []int{12, 14, 13, 11, 10}; !slices.Equal(order, want) {
		t.Errorf("ran requests in order %v, want %v", order, want)
	}
}

func TestInstancesBoundConcurrency(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 1, Instances: 2}, dynamicMD(), true)
	var outs []<-chan outcome
	for id := range 6 {
		outs = append(outs, h.submit(context.Background(), rowsReq(id, 1, 1)))
	}
	h.waitStarted(t)
	h.waitStarted(t) // two running at once, neither released
	for range 6 {
		h.m.gate <- struct{}{}
	}
	for _, o := range outs {
		if r := wait(t, o); r.err != nil {
			t.Fatal(r.err)
		}
	}
	if n := h.m.maxActive.Load(); n != 2 {
		t.Errorf("at most %d calls ran at once, want 2", n)
	}
}

func fixedMD() tensor.Metadata {
	return tensor.Metadata{Name: "fixed",
		Inputs:  []tensor.Spec{{Name: "x", DType: tensor.FP32, Shape: []int64{2, 3}}},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{2, 3}}},
	}
}

func TestNoBatchingPassesRequestsThrough(t *testing.T) {
	h := newHarness(t, Config{Instances: 2}, fixedMD(), false)
	var reqs []Request
	var outs []<-chan outcome
	for id := range 5 {
		reqs = append(reqs, rowsReq(id, 2, 3))
		outs = append(outs, h.submit(context.Background(), reqs[id]))
	}
	for i := range outs {
		checkDoubled(t, reqs[i], wait(t, outs[i]))
	}
	_, shapes := h.m.snapshot()
	for _, s := range shapes {
		if tensor.FormatShape(s) != "[2,3]" {
			t.Errorf("a call had shape %v, want [2,3] as given", s)
		}
	}
	if s := h.b.Stats(); len(s.BatchStats) != 1 || s.BatchStats[0].BatchSize != 1 || s.BatchStats[0].ComputeInfer.Count != 5 {
		t.Errorf("batch stats %+v, want 5 runs of size 1", s.BatchStats)
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8, MaxQueueDelay: hour}, dynamicMD(), false)
	var outs []<-chan outcome
	for id := range 3 {
		outs = append(outs, h.submit(context.Background(), rowsReq(id, 1, 1)))
	}
	h.waitDepth(t, 3)
	closed := make(chan struct{})
	go func() { h.b.Close(); close(closed) }()
	for i, o := range outs {
		checkDoubled(t, rowsReq(i, 1, 1), wait(t, o))
	}
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatal("Close did not return")
	}
	if _, err := h.b.Submit(context.Background(), rowsReq(9, 1, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
}

func TestRejectsBadRequests(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8}, dynamicMD(), false)
	with := func(f func(*Request)) Request { r := rowsReq(1, 2, 2); f(&r); return r }
	tests := []struct {
		name string
		r    Request
		want string
	}{
		{"too many rows", rowsReq(1, 9, 1), "9 rows, more than the model's max_batch_size of 8"},
		{"no rows", with(func(r *Request) { r.Inputs[0].Shape[0], r.Inputs[0].Data = 0, nil }), "no rows"},
		{"wrong dtype", with(func(r *Request) { r.Inputs[0].DType = tensor.Int32 }), "datatype INT32"},
		{"unknown input", with(func(r *Request) { r.Inputs[0].Name = "z" }), `no input "z"`},
		{"missing input", Request{}, `input "x" is missing`},
		{"twice", with(func(r *Request) { r.Inputs = append(r.Inputs, r.Inputs[0]) }), "twice"},
		{"short data", with(func(r *Request) { r.Inputs[0].Data = r.Inputs[0].Data[1:] }), "needs 16 bytes"},
		{"negative priority", with(func(r *Request) { r.Priority = -1 }), "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.b.Submit(context.Background(), tt.r)
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want ErrBadRequest containing %q", err, tt.want)
			}
		})
	}
	if calls, _ := h.m.snapshot(); len(calls) != 0 {
		t.Errorf("the model ran %d times on bad requests", len(calls))
	}
}

func TestOutputThatCannotBeSplit(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 8}, dynamicMD(), false)
	h.m.out = func(in tensor.Tensor) tensor.Tensor {
		return tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{1, 1}, Data: make([]byte, 4)}
	}
	_, err := h.b.Submit(context.Background(), rowsReq(1, 2, 1))
	if err == nil || !strings.Contains(err.Error(), "cannot be split") {
		t.Fatalf("error %v, want one saying the output cannot be split", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	run := newFakeModel(false).run
	tests := []struct {
		name string
		cfg  Config
		md   tensor.Metadata
		want string
	}{
		{"static batch dim", Config{MaxBatchSize: 4}, fixedMD(), "dimension 0 is not dynamic"},
		{"negative max", Config{MaxBatchSize: -1}, dynamicMD(), "negative"},
		{"preferred too big", Config{MaxBatchSize: 4, PreferredBatchSizes: []int{8}}, dynamicMD(), "preferred batch size 8"},
		{"preferred without batching", Config{PreferredBatchSizes: []int{1}}, fixedMD(), "preferred batch size 1"},
		{"negative queue", Config{MaxQueueSize: -1}, fixedMD(), "max_queue_size"},
		{"negative instances", Config{Instances: -1}, fixedMD(), "instances"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.cfg, tt.md, run)
			if err == nil {
				b.Close()
				t.Fatal("New accepted it")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestWarmUpRunsTheSizesThatRun: warm-up runs 1, the powers of two, the
// preferred sizes and max_batch_size, not every size from 1 to the max
// (a max_batch_size of 65536 ran for ever and its worker never booted).
func TestWarmUpRunsTheSizesThatRun(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 100, PreferredBatchSizes: []int{24, 8}}, dynamicMD(), false)
	if err := h.b.WarmUp(); err != nil {
		t.Fatal(err)
	}
	_, shapes := h.m.snapshot()
	var rows []int64
	for _, s := range shapes {
		rows = append(rows, s[0])
	}
	if want := []int64{1, 2, 4, 8, 16, 24, 32, 64, 100}; !slices.Equal(rows, want) {
		t.Errorf("warmed batch sizes %v, want %v", rows, want)
	}
	if s := h.b.Stats(); s.ExecutionCount != 0 {
		t.Errorf("warm-up counted in stats: %+v", s)
	}

	f := newHarness(t, Config{}, fixedMD(), false)
	if err := f.b.WarmUp(); err != nil {
		t.Fatal(err)
	}
	if _, shapes := f.m.snapshot(); len(shapes) != 1 || tensor.FormatShape(shapes[0]) != "[2,3]" {
		t.Errorf("unbatched warm-up ran %v, want one run of [2,3]", shapes)
	}
}

func TestCancelAfterStartWaitsForTheBatch(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 1}, dynamicMD(), true)
	ctx, cancel := context.WithCancel(context.Background())
	r := rowsReq(1, 1, 1)
	o := h.submit(ctx, r)
	h.waitStarted(t)
	cancel()
	select {
	case got := <-o:
		t.Fatalf("Submit returned %v while its batch was still reading the inputs", got.err)
	default:
	}
	h.m.gate <- struct{}{}
	checkDoubled(t, r, wait(t, o))
}
