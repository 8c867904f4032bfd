package prep

import (
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/supervisor-dev/supervisor/internal/tracing"
)

// A request the master traced (its traceparent's sampled flag is set:
// internal/tracing) gets a "prep" span here, child of the master's
// forward span, with a child per stage: prep.parse (the V2 body or the
// images' request), prep.cache (the response cache lookup), prep.decode
// (the images into tensors) and prep.forward (the infer worker's
// exchange, whose span the infer worker's is a child of). Every method
// is nil-safe, and with tracing off (no exporter) or the request not
// traced the trace is nil: the request path pays a nil check.

// traceKey is the request's *prepTrace among its user values.
type traceKey struct{}

// prepTrace is a traced request's spans in this worker.
type prepTrace struct {
	t    *tracing.Tracer
	span trace.Span
}

// beginTrace starts the prep span of a request the master traced, at
// start; nil when it did not (or tracing is off).
func (h *handler) beginTrace(ctx *fasthttp.RequestCtx, model string, start time.Time) *prepTrace {
	if h.tracer == nil {
		return nil
	}
	parent, ok := tracing.Parse(ctx.Request.Header.Peek(tracing.Header))
	if !ok || !parent.IsSampled() {
		return nil
	}
	pt := &prepTrace{t: h.tracer}
	pt.span = h.tracer.Start(parent, "prep", start, attribute.String("model", model))
	ctx.SetUserValue(traceKey{}, pt)
	return pt
}

// traceOf is the request's trace; nil when it is not traced.
func (h *handler) traceOf(ctx *fasthttp.RequestCtx) *prepTrace {
	if h.tracer == nil {
		return nil
	}
	pt, _ := ctx.UserValue(traceKey{}).(*prepTrace)
	return pt
}

// now is the time a stage starts; zero when untraced (no clock read).
func (pt *prepTrace) now() time.Time {
	if pt == nil {
		return time.Time{}
	}
	return time.Now()
}

// stage records stage name, from start until now. (No variadic
// attributes: their slice would be built, and escape, untraced too.)
func (pt *prepTrace) stage(name string, start time.Time) {
	if pt == nil {
		return
	}
	pt.t.Interval(pt.span.SpanContext(), name, start, time.Now())
}

// cache records the cache lookup stage, from start until now.
func (pt *prepTrace) cache(start time.Time, hit bool) {
	if pt == nil {
		return
	}
	pt.t.Interval(pt.span.SpanContext(), "prep.cache", start, time.Now(), attribute.Bool("hit", hit))
}

// decode records the images' decode stage, from start until now.
func (pt *prepTrace) decode(start time.Time, images int) {
	if pt == nil {
		return
	}
	pt.t.Interval(pt.span.SpanContext(), "prep.decode", start, time.Now(), attribute.Int("images", images))
}

// forward starts the span of an exchange with an infer worker and sets
// up's traceparent to it; end it with endForward.
func (pt *prepTrace) forward(up *fasthttp.Request) trace.Span {
	if pt == nil {
		return nil
	}
	s := pt.t.Start(pt.span.SpanContext(), "prep.forward", time.Time{})
	var buf [64]byte
	up.Header.SetBytesV(tracing.Header, tracing.Append(buf[:0], s.SpanContext()))
	return s
}

// endForward ends a forward span, with err if the exchange failed.
func (pt *prepTrace) endForward(s trace.Span, err error) {
	if pt == nil {
		return
	}
	if err != nil {
		s.SetStatus(codes.Error, err.Error())
	}
	s.End()
}

// end ends the prep span with the answer's status.
func (pt *prepTrace) end(ctx *fasthttp.RequestCtx) {
	if pt == nil {
		return
	}
	status := ctx.Response.StatusCode()
	pt.span.SetAttributes(attribute.Int("http.status_code", status))
	if status >= 500 {
		pt.span.SetStatus(codes.Error, "")
	}
	pt.span.End()
}
