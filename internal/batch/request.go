package batch

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Request is one inference request: its inputs and how urgent it is.
type Request struct {
	// Inputs must name every model input exactly once, in any order. With
	// batching on, they must all have the same dimension 0 (the request's
	// rows), between 1 and MaxBatchSize. Their Data is read, never written,
	// and must not change until Submit returns.
	Inputs []tensor.Tensor
	// Priority follows Triton: 1 is the highest priority and larger values
	// are lower. 0 means unset and ranks after every set value, as if the
	// model's default priority level were its lowest. Negative values are
	// rejected. Equal priorities are served in arrival order.
	Priority int
	// Deadline, if not zero, is when the request stops being worth running:
	// if it is still queued then, it is dropped and Submit returns
	// ErrTimeout. It is a wall-clock time, like a context deadline.
	Deadline time.Time
	// Abandoned, if not nil, reports whether nobody waits for the
	// request's answer any more (its client gave up). It is polled while
	// the request queues (once true, the request leaves the queue unrun
	// and Submit returns ErrAbandoned) and while its batch runs, from
	// other goroutines, and never after Submit returns: once it is true
	// for every request of a batch, the run's context ends (abandon.go).
	// It must return at once (a non-blocking peek): the batcher's loop
	// calls it for every queued request each poll, and while one call
	// blocks no request of the model is queued or dispatched.
	// Nil: the answer is always waited for.
	Abandoned func() bool
	// Watch, if not nil, tells of the abandonment as an event instead
	// (hangup.Peer's Watch: the peer's hang-up on the request's
	// connection): Submit calls it once, before queuing the request,
	// with the function to call once nobody waits, and calls the stop
	// it returns before Submit returns; stop must return only once the
	// callback will not run or has returned. The callback does not
	// block. An error means no event will come: Abandoned, if set, is
	// polled instead.
	Watch func(onAbandoned func()) (stop func(), err error)
	// Alone runs the request in a batch of its own: it is never merged
	// with another request, nor another with it, and it keeps its place
	// in the queue's order (the requests before it run in batches without
	// it, those after it wait for it). The master asks this for a body
	// that has been in a crash or a run timeout before (a poison suspect:
	// supervisor/front poison.go), so that a second one strikes that body
	// and not innocent batchmates. With batching off every request runs
	// alone already. Config.Running is told (Run.Alone), so that the
	// infer worker runs it with no other run at once.
	Alone bool
	// ID names the request to Config.Running (the master's token for it,
	// worker.TokenHeader); 0: none. The batcher only passes it on.
	ID uint64
	// Timing, if not nil, is filled in before Submit returns for a
	// request whose batch ran (or was skipped): its times in the batcher,
	// for a trace's spans. Nil (untraced): nothing is recorded.
	Timing *Timing
}

// Timing is one request's way through the batcher (Request.Timing).
type Timing struct {
	// Queued is when the loop queued it, Dispatched when its batch left
	// the queue.
	Queued, Dispatched time.Time
	// Started and Ended bound the model run (after the inputs were
	// concatenated, before the outputs were split).
	Started, Ended time.Time
	// Requests and Rows are its batch's.
	Requests, Rows int
}

// result is what a batch hands back to one Submit.
type result struct {
	outputs []tensor.Tensor
	err     error
}

// The states of a pending request. The loop moves queued→started when it
// puts the request in a batch; whoever first sees its context end moves
// queued→dropped. Exactly one of the two wins, so a dropped request is
// never run.
const (
	stateQueued int32 = iota
	stateStarted
	stateDropped
)

// pending is a validated request on its way through the queue.
type pending struct {
	ctx    context.Context
	inputs []tensor.Tensor // in model input order
	rows   int             // dimension 0; 1 when batching is off
	key    string          // shape key: requests batch only with equal keys
	rank   int             // priority, lower first
	done   chan result     // buffered: a batch never waits for its caller
	// abandoned is Request.Abandoned; nil: never.
	abandoned func() bool
	// watched: Request.Watch took the request, and gone is its answer
	// (abandoned is then not polled).
	watched bool
	gone    atomic.Bool
	run     atomic.Pointer[runWatch] // its batch's, once it runs
	counted atomic.Bool              // run has counted it abandoned
	alone   bool                     // Request.Alone
	id      uint64                   // Request.ID
	timing  *Timing                  // Request.Timing; nil: untraced

	state atomic.Int32

	// Owned by the loop.
	seq      uint64    // arrival order
	enqueued time.Time // when the loop queued it
	inQueue  bool
}

// prepare validates r against the model and builds its pending request.
func (b *Batcher) prepare(ctx context.Context, r Request) (*pending, error) {
	if r.Priority < 0 {
		return nil, fmt.Errorf("%w: priority %d is negative: use 1 for the highest, or 0 for the default", ErrBadRequest, r.Priority)
	}
	inputs, err := orderInputs(b.md, r.Inputs)
	if err != nil {
		return nil, fmt.Errorf("%w: model %q: %w", ErrBadRequest, b.md.Name, err)
	}
	if err := b.checkInputs(inputs); err != nil {
		return nil, fmt.Errorf("%w: model %q: %w", ErrBadRequest, b.md.Name, err)
	}
	p := &pending{ctx: ctx, inputs: inputs, rows: 1, rank: r.Priority, done: make(chan result, 1),
		abandoned: r.Abandoned, alone: r.Alone, id: r.ID, timing: r.Timing}
	if p.rank == 0 {
		p.rank = math.MaxInt
	}
	if b.cfg.MaxBatchSize > 0 {
		if p.rows, err = batchRows(inputs, b.cfg.MaxBatchSize); err != nil {
			return nil, fmt.Errorf("%w: model %q: %w", ErrBadRequest, b.md.Name, err)
		}
		p.key = shapeKey(inputs)
	}
	return p, nil
}

// checkInputs runs Config.CheckInput, if set, on each input.
func (b *Batcher) checkInputs(inputs []tensor.Tensor) error {
	if b.cfg.CheckInput == nil {
		return nil
	}
	for i := range inputs {
		if err := b.cfg.CheckInput(&inputs[i]); err != nil {
			return err
		}
	}
	return nil
}

// orderInputs checks each input against its spec and returns them in model
// input order.
func orderInputs(md tensor.Metadata, in []tensor.Tensor) ([]tensor.Tensor, error) {
	ordered := make([]tensor.Tensor, len(md.Inputs))
	seen := make([]bool, len(md.Inputs))
	for _, t := range in {
		i := specIndex(md.Inputs, t.Name)
		switch {
		case i < 0:
			return nil, fmt.Errorf("there is no input %q", t.Name)
		case seen[i]:
			return nil, fmt.Errorf("input %q is given twice", t.Name)
		case t.DType != md.Inputs[i].DType:
			return nil, fmt.Errorf("input %q has datatype %s, the model expects %s", t.Name, t.DType, md.Inputs[i].DType)
		}
		if err := md.Inputs[i].Accepts(t.Shape); err != nil {
			return nil, err
		}
		if err := t.Check(); err != nil {
			return nil, err
		}
		ordered[i], seen[i] = t, true
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("input %q is missing", md.Inputs[i].Name)
		}
	}
	return ordered, nil
}

func specIndex(specs []tensor.Spec, name string) int {
	for i, s := range specs {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// batchRows returns the rows the inputs share along dimension 0.
func batchRows(inputs []tensor.Tensor, max int) (int, error) {
	rows := inputs[0].Shape[0]
	for _, t := range inputs[1:] {
		if t.Shape[0] != rows {
			return 0, fmt.Errorf("inputs %q and %q have %d and %d rows: all inputs of a request must have the same dimension 0",
				inputs[0].Name, t.Name, rows, t.Shape[0])
		}
	}
	switch {
	case rows < 1:
		return 0, fmt.Errorf("input %q has no rows (shape %s)", inputs[0].Name, tensor.FormatShape(inputs[0].Shape))
	case rows > int64(max):
		return 0, fmt.Errorf("the request has %d rows, more than the model's max_batch_size of %d: split it into smaller requests", rows, max)
	}
	return int(rows), nil
}

// shapeKey encodes what must match for requests to share a batch: each
// input's datatype and dimensions past the first, in model input order.
func shapeKey(inputs []tensor.Tensor) string {
	var k []byte
	for _, t := range inputs {
		k = append(k, byte(t.DType))
		k = binary.AppendUvarint(k, uint64(len(t.Shape)))
		for _, d := range t.Shape[1:] {
			k = binary.AppendVarint(k, d)
		}
	}
	return string(k)
}

// before reports whether p is served before q: higher priority, then
// earlier arrival.
func (p *pending) before(q *pending) bool {
	if p.rank != q.rank {
		return p.rank < q.rank
	}
	return p.seq < q.seq
}
