package batch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// DefaultMaxQueueSize is the queue bound used when Config.MaxQueueSize is 0.
const DefaultMaxQueueSize = 1024

// Config is one model's batching configuration, named after Triton's
// dynamic_batching settings. The zero value runs requests one at a time,
// unbatched, with a queue of DefaultMaxQueueSize.
type Config struct {
	// MaxBatchSize is the largest number of rows (dimension 0) one run may
	// carry. 0 means the model does not batch: requests run as they come,
	// with their shapes as given, as fixed-shape models need. A positive
	// value requires every model input and output to have a dynamic
	// dimension 0.
	MaxBatchSize int
	// MaxQueueDelay is how long the oldest queued request may wait for
	// company before a partial batch is dispatched. 0 dispatches whatever is
	// queued as soon as an instance is free.
	MaxQueueDelay time.Duration
	// PreferredBatchSizes are batch sizes, in rows, dispatched as soon as
	// the queue can form one, without waiting for MaxQueueDelay; the
	// largest available wins. Each must be in [1, MaxBatchSize].
	PreferredBatchSizes []int
	// MaxQueueSize bounds the number of queued requests (not rows); Submit
	// fails at once with ErrQueueFull beyond it. 0 means
	// DefaultMaxQueueSize.
	MaxQueueSize int
	// Instances is the number of batches that may run at once. 0 means 1.
	Instances int
	// CheckInput, if set, refuses an input that the runner would refuse
	// whatever it shares a batch with, although it matches the metadata
	// (ONNX Runtime's string tensors cannot carry a NUL byte: ort.CheckInput).
	// Submit runs it on each input before queueing, so that such a request
	// fails alone with ErrBadRequest instead of failing its whole batch.
	// nil checks against the metadata alone.
	CheckInput func(t *tensor.Tensor) error
	// Observer, if set, is told about queue depth changes, queue waits
	// and finished batches; nil reports nothing.
	Observer Observer
	// Running, if set, is called as each batch starts, before its inputs
	// are joined, on the batch's goroutine, with the batch (Run); the
	// function it returns is called once the outputs are split, before
	// any request is answered. Between the two the batch's requests are
	// at work: the infer worker records them where the master reads them
	// after a crash (shm.Slot.Begin), and may block here to run an Alone
	// batch with no other run at once. nil: nothing is called.
	Running func(Run) (done func())
}

// Run is one batch as it starts.
type Run struct {
	// IDs are its requests' Request.ID, in batch order.
	IDs []uint64
	// Alone is its one request's Request.Alone.
	Alone bool
}

// withDefaults fills in the zero values that mean a default.
func (c Config) withDefaults() Config {
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = DefaultMaxQueueSize
	}
	if c.Instances == 0 {
		c.Instances = 1
	}
	c.PreferredBatchSizes = slices.Compact(slices.Sorted(slices.Values(c.PreferredBatchSizes)))
	return c
}

// validate checks c, with defaults applied, against the model md.
func (c Config) validate(md tensor.Metadata) error {
	switch {
	case c.MaxBatchSize < 0:
		return fmt.Errorf("max_batch_size %d is negative: use 0 to turn batching off", c.MaxBatchSize)
	case c.MaxQueueDelay < 0:
		return fmt.Errorf("max_queue_delay %s is negative", c.MaxQueueDelay)
	case c.MaxQueueSize < 0:
		return fmt.Errorf("max_queue_size %d is negative: use 0 for the default of %d", c.MaxQueueSize, DefaultMaxQueueSize)
	case c.Instances < 0:
		return fmt.Errorf("instances %d is negative", c.Instances)
	}
	for _, n := range c.PreferredBatchSizes {
		if n < 1 || n > c.MaxBatchSize {
			return fmt.Errorf("preferred batch size %d is outside [1, max_batch_size %d]", n, c.MaxBatchSize)
		}
	}
	if c.MaxBatchSize == 0 {
		return nil
	}
	if len(md.Inputs) == 0 {
		return errors.New("the model has no inputs to batch")
	}
	if err := batchable("input", md.Inputs); err != nil {
		return err
	}
	return batchable("output", md.Outputs)
}

// batchable checks that every spec has a dynamic dimension 0 to
// concatenate or split along.
func batchable(kind string, specs []tensor.Spec) error {
	for _, s := range specs {
		if len(s.Shape) == 0 || s.Shape[0] != -1 {
			return fmt.Errorf("%s %q has shape %s, whose dimension 0 is not dynamic, so the model cannot batch: set max_batch_size to 0",
				kind, s.Name, tensor.FormatShape(s.Shape))
		}
	}
	return nil
}

// preferred reports whether rows is one of the preferred batch sizes.
func (c *Config) preferred(rows int) bool {
	_, ok := slices.BinarySearch(c.PreferredBatchSizes, rows)
	return ok
}
