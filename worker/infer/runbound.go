package infer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// RunTimeoutError is why a batch failed whose model run outlived the
// model's max_run_time and was terminated. Its requests are answered 500
// with worker.RunTimeoutHeader: Triton's ONNX Runtime backend answers a
// run that ORT failed, terminate flag included, with
// TRITONSERVER_ERROR_INTERNAL, which its HTTP endpoint maps to 500; a 504
// would say a gateway timed out, which clients and load balancers retry
// elsewhere, and a request that makes runs explode should not be retried.
type RunTimeoutError struct {
	Model      string
	MaxRunTime time.Duration
}

func (e *RunTimeoutError) Error() string {
	return fmt.Sprintf("model %q: the run took longer than the model's max_run_time of %s and was stopped; "+
		"if the input is legitimate, raise models[].max_run_time (or infer.max_run_time)", e.Model, e.MaxRunTime)
}

// runBound bounds one run of a model (worker.Model.MaxRunTime). At max the
// run's context ends and ONNX Runtime is told to terminate it, which it
// does between nodes. A run still going grace later is in a node that
// does not return (a driver hang, a kernel looping on a bad shape): the
// ORT session, and the goroutine and batch instance it holds, cannot be
// got back, so wedged is called; it must make the master replace the
// worker, not let it go on serving half-stuck.
type runBound struct {
	model  string
	max    time.Duration // 0: unbounded
	grace  time.Duration
	wedged func(model string, ran time.Duration)
}

// graceFor is how long a terminated run gets to return: as long as it was
// allowed to run, at least graceMin (ORT finishes the node it is in, and
// one node of a model sized for max is a fraction of it) and at most
// graceMax (the worker's other models wait on a replacement meanwhile).
func graceFor(bound time.Duration) time.Duration {
	return min(max(bound, graceMin), graceMax)
}

const (
	graceMin = time.Second
	graceMax = 30 * time.Second
)

// run calls fn under the bound, on a context that also ends with parent
// (every request of the batch abandoned: batch.ErrAbandoned). A run that
// fails after the bound passed fails with the bound's *RunTimeoutError;
// one that succeeds just past it keeps its result.
func (b *runBound) run(parent context.Context, fn func(context.Context) ([]tensor.Tensor, error)) ([]tensor.Tensor, error) {
	if b.max <= 0 {
		return fn(parent)
	}
	cause := &RunTimeoutError{Model: b.model, MaxRunTime: b.max}
	ctx, cancel := context.WithTimeoutCause(parent, b.max, cause)
	defer cancel()
	start := time.Now()
	watchdog := time.AfterFunc(b.max+b.grace, func() { b.wedged(b.model, time.Since(start)) })
	defer watchdog.Stop()
	outs, err := fn(ctx)
	if err != nil && errors.Is(context.Cause(ctx), cause) {
		return nil, cause
	}
	return outs, err
}
