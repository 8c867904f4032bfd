package worker

import (
	"context"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tracing"
)

// StartTracing starts the worker's span exporter when the spec has one
// (Spec.Tracing): a nil Tracer is tracing off. stop exports what is
// queued, within the export timeout, and is called as the worker exits.
// An exporter that cannot start is logged and leaves tracing off: spans
// are never worth a worker that does not serve.
func (r *Runtime) StartTracing() (t *tracing.Tracer, stop func()) {
	tc := r.Spec.Tracing
	if tc == nil {
		return nil, func() {}
	}
	t, err := tracing.Start(*tc, r.Spec.Name, r.Log)
	if err != nil {
		r.Log.Error().Err(err).Msg("tracing is off in this worker: the exporter did not start")
		return nil, func() {}
	}
	return t, func() {
		ctx, cancel := context.WithTimeout(context.Background(), tc.ExportTimeout+time.Second)
		defer cancel()
		_ = t.Shutdown(ctx)
	}
}
