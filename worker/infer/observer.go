package infer

import (
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/shm"
)

// slotObserver reports one model's batcher to the worker's scoreboard
// slot: the worker's queue depth (the sum over its models), queue-time and
// batch-size histograms, and the model's Triton counters.
type slotObserver struct {
	slot  *shm.Slot
	model shm.ModelSlot
	// depth is the last depth this model reported; only the batcher's
	// loop calls QueueDepthChanged, so it needs no lock.
	depth int
	// armed is set once the model is warmed up: warm-up runs are not
	// traffic and must not count.
	armed atomic.Bool
}

// observers are the slot observers of a worker's models, armed together
// once every model is warmed up.
type observers []*slotObserver

// add returns the batcher observer of the worker's i-th model, or nil (no
// observer at all, not a nil pointer in an interface) without a slot.
func (obs *observers) add(slot *shm.Slot, i int) batch.Observer {
	if slot == nil {
		return nil
	}
	o := &slotObserver{slot: slot, model: slot.Model(i)}
	*obs = append(*obs, o)
	return o
}

func (obs observers) arm() {
	for _, o := range obs {
		o.armed.Store(true)
	}
}

func (o *slotObserver) QueueDepthChanged(depth int) {
	if !o.armed.Load() {
		return
	}
	o.slot.AddQueueDepth(depth - o.depth)
	o.depth = depth
}

func (o *slotObserver) Queued(wait time.Duration) {
	if !o.armed.Load() {
		return
	}
	o.slot.ObserveQueueTime(wait)
	o.model.ObserveQueueTime(wait)
}

func (o *slotObserver) Executed(requests, rows int, ok bool, input, infer, output time.Duration) {
	if !o.armed.Load() {
		return
	}
	if ok {
		o.slot.ObserveBatchSize(rows)
	}
	o.model.BatchExecuted(requests, rows, ok, input, infer, output)
}
