package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Errors Submit returns, for callers that map them with errors.Is.
var (
	// ErrQueueFull means MaxQueueSize requests were already waiting; a
	// server answers 503 with Retry-After.
	ErrQueueFull = errors.New("the model's request queue is full")
	// ErrTimeout means the request's Deadline passed before it finished.
	ErrTimeout = errors.New("the request timed out")
	// ErrClosed means the Batcher was closed before the request was queued.
	ErrClosed = errors.New("the model is shutting down")
	// ErrBadRequest wraps every error caused by the request itself rather
	// than the model: missing or unknown inputs, wrong datatypes or shapes,
	// too many rows. A server answers these with a client error.
	ErrBadRequest = errors.New("bad inference request")
)

// RunFunc runs the model once on inputs given in model input order and
// returns every output in model output order; for example an ort.Session's
// RunContext with nil output names. It must be safe for Instances
// concurrent calls, and must not keep or modify inputs after it returns.
// ctx ends, with ErrAbandoned, when every request of the batch has been
// abandoned (Request.Abandoned): a RunFunc should then stop and fail.
type RunFunc func(ctx context.Context, inputs []tensor.Tensor) ([]tensor.Tensor, error)

// Batcher queues one model's requests and runs them in batches. Its methods
// are safe for concurrent use.
type Batcher struct {
	cfg   Config
	md    tensor.Metadata
	run   RunFunc
	clock clock
	stats recorder

	submitc chan *pending
	cancelc chan *pending
	finishc chan struct{}
	hangups *hangups // requests a Watch told were abandoned
	closing chan struct{}
	stopped chan struct{} // closed when the loop has exited
	once    sync.Once
	depth   atomic.Int64

	// observe, if set, is called by the loop whenever the queue depth
	// changes; tests wait on it instead of sleeping.
	observe func(depth int)
}

// New validates cfg against the model md and starts the batcher's loop.
// With MaxBatchSize > 0, every input and output of md must have a dynamic
// dimension 0. The caller must Close the Batcher.
func New(cfg Config, md tensor.Metadata, run RunFunc) (*Batcher, error) {
	return newBatcher(cfg, md, run, realClock{}, nil)
}

func newBatcher(cfg Config, md tensor.Metadata, run RunFunc, clk clock, observe func(int)) (*Batcher, error) {
	cfg = cfg.withDefaults()
	if run == nil {
		return nil, fmt.Errorf("model %q: batching needs a RunFunc", md.Name)
	}
	if err := cfg.validate(md); err != nil {
		return nil, fmt.Errorf("model %q: %w", md.Name, err)
	}
	b := &Batcher{
		cfg: cfg, md: md, run: run, clock: clk, observe: observe,
		submitc: make(chan *pending),
		cancelc: make(chan *pending),
		finishc: make(chan struct{}),
		hangups: newHangups(),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	b.stats.init()
	go b.loop()
	return b, nil
}

// Submit queues r and blocks until its outputs, in model output order, are
// ready. If ctx ends or r.Deadline passes while r is queued, r leaves the
// queue, is never run, and Submit returns ctx's error or ErrTimeout. Once
// r's batch has started, Submit waits for it and returns its result: until
// the run ends the batch may still read r's input buffers, which the
// caller may reuse once Submit returns. Only abandoning every request of
// the batch (Request.Abandoned) stops the run early. Outputs of a batched request alias one buffer
// shared with the rest of its batch, with capacities cut so that appending
// to one never writes into another.
func (b *Batcher) Submit(ctx context.Context, r Request) (outs []tensor.Tensor, err error) {
	start := b.clock.Now()
	defer func() { b.stats.request(err == nil, b.clock.Now().Sub(start)) }()
	if !r.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, r.Deadline,
			fmt.Errorf("model %q: %w: its deadline passed", b.md.Name, ErrTimeout))
		defer cancel()
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	p, err := b.prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	if stop := b.watch(p, r.Watch); stop != nil {
		defer stop()
	}
	select {
	case b.submitc <- p:
	case <-b.stopped:
		return nil, fmt.Errorf("model %q: %w", b.md.Name, ErrClosed)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case res := <-p.done:
		return res.outputs, res.err
	case <-ctx.Done():
		if p.state.CompareAndSwap(stateQueued, stateDropped) {
			select {
			case b.cancelc <- p: // free its queue slot now, not at the next batch
			case <-b.stopped:
			}
			return nil, context.Cause(ctx)
		}
	}
	// The batch started, or the loop dropped p, before ctx ended. Either
	// way an answer is on its way; wait for it so the caller's input
	// buffers are never read after Submit returns.
	if p.state.Load() == stateDropped {
		return nil, context.Cause(ctx)
	}
	res := <-p.done
	return res.outputs, res.err
}

// Close stops accepting requests (Submit returns ErrClosed), dispatches
// everything queued without waiting for MaxQueueDelay, and returns when the
// last batch has finished. Closing twice is harmless.
func (b *Batcher) Close() {
	b.once.Do(func() { close(b.closing) })
	<-b.stopped
}
