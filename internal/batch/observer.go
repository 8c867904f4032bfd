package batch

import "time"

// Observer is told what the batcher does, as it happens, for accounting
// outside it (the worker's scoreboard slot). Its methods are called from
// the batcher's loop and batch goroutines: they must be fast and must not
// block or call back into the Batcher.
type Observer interface {
	// QueueDepthChanged reports the number of queued requests, each time
	// it changes.
	QueueDepthChanged(depth int)
	// Queued reports how long one request waited before its batch
	// started.
	Queued(wait time.Duration)
	// Executed reports one finished batch: its requests and rows, whether
	// it succeeded, and its compute phases (concatenation, model run,
	// split).
	Executed(requests, rows int, ok bool, input, infer, output time.Duration)
}

// observeBatch reports a finished batch to the Observer, if any.
func (b *Batcher) observeBatch(items []*pending, rows int, dispatched time.Time, ok bool, compute [3]time.Duration) {
	o := b.cfg.Observer
	if o == nil {
		return
	}
	for _, p := range items {
		o.Queued(dispatched.Sub(p.enqueued))
	}
	o.Executed(len(items), rows, ok, compute[0], compute[1], compute[2])
}
