package infer

import (
	"context"
	"fmt"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// model is one served model: its ONNX Runtime session behind its dynamic
// batcher. Every request goes through the batcher, batching on or off, so
// that the queue bound, request timeouts, priorities and the instance count
// hold for every model.
type model struct {
	md      tensor.Metadata
	sess    *ort.Session
	batcher *batch.Batcher
	// divisors are integer inputs the graph divides by: requests with a
	// zero there are refused (divisor.go).
	divisors []string
	// warmupFailed is why its warm-up run failed ("" when it ran or none
	// was asked): it serves anyway (warmUp), and says so in the log and
	// status.
	warmupFailed string
	// identity is the content identity of the file loaded
	// (openIdentified), sent with every answer (worker.ModelIDHeader).
	identity string
}

// openModel loads m, starts its batcher and warms it up as m.Warmup says
// (by default the batch sizes that run, batch.WarmupSizes, so that they do
// not pay ONNX Runtime's first run of a shape; a warm-up ONNX Runtime
// refuses leaves the model serving, with model.warmupFailed set).
// obs, if not nil, is told what the batcher does (the scoreboard); runs
// is told each run (atwork.go). Each
// run is bounded by m.MaxRunTime; wedged is called on a run that outlives
// its bound and grace (runbound.go).
func openModel(m worker.Model, opts ort.Options, obs batch.Observer, runs *runs, wedged func(string, time.Duration)) (_ *model, err error) {
	// A panic in a library while loading or warming up one model (a Go
	// bug in onnxruntime_go on a shape it does not expect) makes that
	// model unavailable instead of killing the worker (its half-built
	// session, if any, is not released).
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("model %q: loading or warming up panicked: %v", m.Name, p)
		}
	}()
	sess, err := ort.Open(m.Path, m.Name, opts)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", m.Name, err)
	}
	md := sess.Metadata()
	graph := readGraph(m.Path)
	cfg := batchConfig(m.Batching)
	cfg.Observer = obs
	cfg.Running = runs.running
	cfg.CheckInput = ort.CheckInput
	bound := &runBound{model: m.Name, max: m.MaxRunTime, grace: graceFor(m.MaxRunTime), wedged: wedged}
	b, err := batch.New(cfg, md, func(ctx context.Context, in []tensor.Tensor) ([]tensor.Tensor, error) {
		return bound.run(ctx, func(ctx context.Context) ([]tensor.Tensor, error) {
			return sess.RunContext(ctx, in, nil)
		})
	})
	if err != nil {
		_ = sess.Close()
		return nil, fmt.Errorf("%w (model file %q, its batching section in the config)", err, m.Path)
	}
	mod := &model{md: md, sess: sess, batcher: b, divisors: integerDivisors(&md, graph.divisors)}
	if mod.warmupFailed, err = warmUp(m, b, &md, graph); err != nil {
		mod.close()
		return nil, err
	}
	return mod, nil
}

// batchConfig maps the spec's batching settings; nil is batching off.
func batchConfig(b *worker.Batching) batch.Config {
	if b == nil {
		return batch.Config{}
	}
	return batch.Config{
		MaxBatchSize:        b.MaxBatchSize,
		MaxQueueDelay:       b.MaxQueueDelay,
		PreferredBatchSizes: b.PreferredBatchSizes,
		MaxQueueSize:        b.MaxQueueSize,
		Instances:           b.Instances,
	}
}

// close runs what is queued, then releases the session.
func (m *model) close() {
	m.batcher.Close()
	_ = m.sess.Close()
}

// selectOutputs returns the outputs named in names, in that order, from
// outs in model output order; no names means all of them.
func (m *model) selectOutputs(outs []tensor.Tensor, names []string) ([]tensor.Tensor, error) {
	if len(names) == 0 {
		return outs, nil
	}
	sel := make([]tensor.Tensor, len(names))
	for k, name := range names {
		j := -1
		for i, spec := range m.md.Outputs {
			if spec.Name == name {
				j = i
			}
		}
		if j < 0 {
			return nil, fmt.Errorf("%w: model %q has no output %q", batch.ErrBadRequest, m.md.Name, name)
		}
		sel[k] = outs[j]
	}
	return sel, nil
}
