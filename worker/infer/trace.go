package infer

import (
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/tracing"
)

// A request the master traced (its traceparent, from the prep worker's
// forward span, is sampled: internal/tracing) gets an "infer" span here,
// with the batcher's stages as children: infer.queue (queued until its
// batch left the queue), infer.batch (the batch's inputs concatenated)
// and infer.run (ONNX Runtime's run of the batch), the last two with the
// batch's requests and rows. Untraced (or tracing off), the trace is nil
// and its nil-safe methods cost a nil check.

// inferTrace is a traced request's span and its batcher times.
type inferTrace struct {
	t      *tracing.Tracer
	span   trace.Span
	timing batch.Timing
}

// beginTrace starts the infer span of a request the master traced, at
// start; nil when it did not, or tracing is off.
func (s *server) beginTrace(ctx *fasthttp.RequestCtx, start time.Time) *inferTrace {
	if s.tracer == nil {
		return nil
	}
	parent, ok := tracing.Parse(ctx.Request.Header.Peek(tracing.Header))
	if !ok || !parent.IsSampled() {
		return nil
	}
	return &inferTrace{t: s.tracer, span: s.tracer.Start(parent, "infer", start)}
}

// timed points r's batcher timing at the trace's, when traced.
func (it *inferTrace) timed(r *batch.Request) {
	if it != nil {
		r.Timing = &it.timing
	}
}

// end records the batcher's stages, if the request reached a batch, and
// ends the infer span with the answer's status (err: why it failed).
func (it *inferTrace) end(ctx *fasthttp.RequestCtx, model string, err error) {
	if it == nil {
		return
	}
	parent := it.span.SpanContext()
	if tm := it.timing; !tm.Dispatched.IsZero() {
		size := []attribute.KeyValue{attribute.Int("batch.requests", tm.Requests), attribute.Int("batch.rows", tm.Rows)}
		it.t.Interval(parent, "infer.queue", tm.Queued, tm.Dispatched)
		it.t.Interval(parent, "infer.batch", tm.Dispatched, tm.Started, size...)
		it.t.Interval(parent, "infer.run", tm.Started, tm.Ended, size...)
	}
	it.span.SetAttributes(attribute.String("model", model), attribute.Int("http.status_code", ctx.Response.StatusCode()))
	if err != nil {
		it.span.SetStatus(codes.Error, err.Error())
	}
	it.span.End()
}
