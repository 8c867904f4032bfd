package batch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// waitLimit bounds every wait in these tests; nothing should come close.
const waitLimit = 10 * time.Second

// fakeClock moves only when a test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, fakeTimer{c.now.Add(d), ch})
	return ch
}

// Advance moves the clock on by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
		} else {
			t.c <- c.now
		}
	}
	c.timers = kept
}

// fakeModel computes y = 2x on FP32 inputs "x" of any shape, records every
// call, and, when gated, holds each call until the test sends on gate.
type fakeModel struct {
	gate    chan struct{}
	started chan int // rows of each call, as it starts

	mu    sync.Mutex
	calls [][]float32
	shape [][]int64
	ctx   context.Context // of the latest call

	active, maxActive atomic.Int32
	// out, if set, replaces the computed output (to test bad models).
	out func(in tensor.Tensor) tensor.Tensor
}

func newFakeModel(gated bool) *fakeModel {
	m := &fakeModel{started: make(chan int, 1024)}
	if gated {
		m.gate = make(chan struct{})
	}
	return m
}

// run doubles x; gated, it waits for the gate or for ctx to end (then it
// fails with ctx's cause, as a model told to terminate does).
func (m *fakeModel) run(ctx context.Context, in []tensor.Tensor) ([]tensor.Tensor, error) {
	n := m.active.Add(1)
	defer m.active.Add(-1)
	for {
		old := m.maxActive.Load()
		if n <= old || m.maxActive.CompareAndSwap(old, n) {
			break
		}
	}
	if len(in) != 1 || in[0].Name != "x" || in[0].Check() != nil {
		return nil, fmt.Errorf("fake model: bad inputs %+v", in)
	}
	x := orttest.F32s(in[0].Data)
	m.mu.Lock()
	m.calls = append(m.calls, x)
	m.shape = append(m.shape, append([]int64(nil), in[0].Shape...))
	m.ctx = ctx
	m.mu.Unlock()
	m.started <- int(in[0].Shape[0])
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if m.out != nil {
		return []tensor.Tensor{m.out(in[0])}, nil
	}
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = 2 * v
	}
	return []tensor.Tensor{{Name: "y", DType: tensor.FP32, Shape: append([]int64(nil), in[0].Shape...), Data: orttest.F32Bytes(y)}}, nil
}

// snapshot returns the values and shapes of every call so far.
func (m *fakeModel) snapshot() ([][]float32, [][]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]float32(nil), m.calls...), append([][]int64(nil), m.shape...)
}

// dynamicMD is a model with x, y FP32 [-1,-1]: batchable along dimension 0,
// with a free second dimension to make shape keys differ.
func dynamicMD() tensor.Metadata {
	return tensor.Metadata{Name: "fake",
		Inputs:  []tensor.Spec{{Name: "x", DType: tensor.FP32, Shape: []int64{-1, -1}}},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{-1, -1}}},
	}
}

// harness is a Batcher over a fakeModel on a fake clock.
type harness struct {
	b      *Batcher
	m      *fakeModel
	clk    *fakeClock
	depths chan int
}

func newHarness(t *testing.T, cfg Config, md tensor.Metadata, gated bool) *harness {
	t.Helper()
	h := &harness{m: newFakeModel(gated), clk: newFakeClock(), depths: make(chan int, 1024)}
	b, err := newBatcher(cfg, md, h.m.run, h.clk, func(d int) { h.depths <- d })
	if err != nil {
		t.Fatal(err)
	}
	h.b = b
	t.Cleanup(func() {
		if h.m.gate != nil {
			close(h.m.gate) // let held batches finish so Close can return
		}
		b.Close()
	})
	return h
}

// waitDepth waits until the queue holds want requests.
func (h *harness) waitDepth(t *testing.T, want int) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case d := <-h.depths:
			if d == want {
				return
			}
		case <-timeout:
			t.Fatalf("queue depth never reached %d (now %d)", want, h.b.Stats().QueueDepth)
		}
	}
}

// waitStarted waits for the next model call to start and returns its rows.
func (h *harness) waitStarted(t *testing.T) int {
	t.Helper()
	select {
	case n := <-h.m.started:
		return n
	case <-time.After(waitLimit):
		t.Fatal("no batch started")
		return 0
	}
}

// holdFirst submits request 1 (rowsReq(1, 1, 2)) and waits for its run
// to start alone, holding the only instance until the test feeds h.m.gate.
func (h *harness) holdFirst(t *testing.T) <-chan outcome {
	t.Helper()
	first := h.submit(context.Background(), rowsReq(1, 1, 2))
	if rows := h.waitStarted(t); rows != 1 {
		t.Fatalf("first run of %d rows, want 1", rows)
	}
	return first
}

type outcome struct {
	outs []tensor.Tensor
	err  error
}

// submit runs Submit on its own goroutine.
func (h *harness) submit(ctx context.Context, r Request) <-chan outcome {
	c := make(chan outcome, 1)
	go func() {
		outs, err := h.b.Submit(ctx, r)
		c <- outcome{outs, err}
	}()
	return c
}

func wait(t *testing.T, c <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-c:
		return o
	case <-time.After(waitLimit):
		t.Fatal("Submit did not return")
		return outcome{}
	}
}

// rowsReq is a request of rows×cols FP32 values id*1000+i, so every value
// names the request it came from.
func rowsReq(id, rows, cols int) Request {
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(id*1000 + i)
	}
	return Request{Inputs: []tensor.Tensor{{Name: "x", DType: tensor.FP32,
		Shape: []int64{int64(rows), int64(cols)}, Data: orttest.F32Bytes(x)}}}
}

// checkDoubled checks that o answers r with y = 2x, of r's shape.
func checkDoubled(t *testing.T, r Request, o outcome) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("Submit: %v", o.err)
	}
	if len(o.outs) != 1 {
		t.Fatalf("got %d outputs, want 1", len(o.outs))
	}
	y, x := o.outs[0], r.Inputs[0]
	if tensor.FormatShape(y.Shape) != tensor.FormatShape(x.Shape) {
		t.Fatalf("output shape %v, want %v", y.Shape, x.Shape)
	}
	xs, ys := orttest.F32s(x.Data), orttest.F32s(y.Data)
	for i := range xs {
		if ys[i] != 2*xs[i] {
			t.Fatalf("y[%d] = %v, want %v", i, ys[i], 2*xs[i])
		}
	}
}

// ids returns the request ids (value/1000) seen in one call, in order, once
// each.
func ids(call []float32) []int {
	var out []int
	for _, v := range call {
		id := int(v) / 1000
		if len(out) == 0 || out[len(out)-1] != id {
			out = append(out, id)
		}
	}
	return out
}
