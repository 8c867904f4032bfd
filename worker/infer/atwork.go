package infer

import (
	"sync"
	"sync/atomic"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/shm"
)

// runs is what the worker's model runs are at work on, across its models
// (batch.Config.Running). Each run's requests are recorded in the
// worker's scoreboard slot (shm.Slot.Begin: the master's tokens,
// worker.TokenHeader) before its inputs are joined and cleared once its
// outputs are split, so that after a crash the master strikes the
// requests of the runs that were executing and no other: not the
// requests queued, nor another model's waiting on its own queue
// (supervisor/front poison.go).
//
// A crash during two runs at once (two models, or two instances) cannot
// be pinned on either: ONNX Runtime's fault kills the process from
// whichever thread. So a batch of a poison suspect (batch.Run.Alone: the
// master's worker.AloneHeader) runs with no other run at once: it waits
// for the runs executing to end, and no run starts until it has. A crash
// then is that body's own. Suspects are rare, so this costs little.
type runs struct {
	slot *shm.Slot // nil: no scoreboard, nothing recorded
	mu   sync.RWMutex
	unit atomic.Uint64 // numbers the runs, to tell them apart in the record
}

// running is batch.Config.Running.
func (w *runs) running(r batch.Run) (done func()) {
	if r.Alone {
		w.mu.Lock()
	} else {
		w.mu.RLock()
	}
	work := w.slot.Begin(w.unit.Add(1), r.IDs...)
	return func() {
		work.End()
		if r.Alone {
			w.mu.Unlock()
		} else {
			w.mu.RUnlock()
		}
	}
}
