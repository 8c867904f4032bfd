package front

import (
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/supervisor-dev/supervisor/internal/tracing"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The trace routes (Triton's trace extension: GET and POST
// /v2/trace/setting, and /v2/models/{m}/trace/setting for a model's
// overrides) are answered by the master itself under the logging
// route's admission (decideSettings): the API key first, GET with no
// body or POST with a Content-Length body of at most MaxRepositoryBody
// bytes. The settings are the master's alone (internal/tracing's
// package doc says why the workers need none), so a POST is in force for
// the next request.

// TracePath is the global trace settings route.
const TracePath = "/v2/trace/setting"

// Tracing is the master's tracing: its span exporter and the trace
// settings that decide which requests are traced. A nil *Tracing (the
// config has no tracing.endpoint) is tracing off: the trace routes
// answer 404 and forward pays one nil check.
type Tracing struct {
	Tracer  *tracing.Tracer
	Sampler *tracing.Sampler
}

// tracePath reports whether path is a trace settings route, and which
// model's ("" for the global one).
func tracePath(path string) (model string, ok bool) {
	if path == TracePath {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, "/v2/models/")
	if !ok {
		return "", false
	}
	model, ok = strings.CutSuffix(rest, "/trace/setting")
	if !ok || model == "" || strings.Contains(model, "/") {
		return "", false
	}
	return model, true
}

// decideTrace admits a trace settings request from its header, once
// decide has checked its API key.
func (f *Front) decideTrace(c *config.Config, h *fasthttp.RequestHeader, path, model string, v *verdict) *verdict {
	if f.opts.Tracing == nil {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusNotFound,
			Msg: "no route for \"" + path + "\": tracing is off (set tracing.endpoint in the config to an OTLP collector)"}
		return v
	}
	if model != "" && !servesModel(c, model) {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusNotFound, Msg: "unknown model \"" + model + "\""}
		return v
	}
	return f.decideSettings(h, v, path)
}

// extensions are the protocol extensions GET /v2 lists beyond
// v2.Extensions: trace while tracing is on.
func (f *Front) extensions() []string {
	if f.opts.Tracing != nil {
		return []string{"trace"}
	}
	return nil
}

// servesModel reports whether c names model.
func servesModel(c *config.Config, model string) bool {
	for _, m := range c.Models {
		if m.Name == model {
			return true
		}
	}
	return false
}

// serveTrace answers a trace settings request admitted by decideTrace.
func (f *Front) serveTrace(ctx *fasthttp.RequestCtx, model string) {
	s := f.opts.Tracing.Sampler
	if ctx.IsPost() {
		body, ok := f.readMasterBody(ctx)
		if !ok {
			return
		}
		if err := s.Update(model, body); err != nil {
			f.reply(ctx, fasthttp.StatusBadRequest, err.Error())
			return
		}
		f.log.Info().Str("model", model).RawJSON("settings", s.JSON(model)).Msg("trace settings set through " + string(ctx.Path()))
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(s.JSON(model))
}

// requestTrace is a sampled request's spans in the master: the request
// from its first byte, and its forward to a prep worker.
type requestTrace struct {
	request, forward trace.Span
}

// beginTrace decides whether the request for model is traced. If so it
// starts its spans, as children of the client's traceparent when valid,
// and sets the traceparent the prep worker receives to the forward span;
// if not, it removes any traceparent the client sent, so no worker traces
// it. Only called with tracing on.
func (t *Tracing) beginTrace(ctx *fasthttp.RequestCtx, model string) *requestTrace {
	if !t.Sampler.Sample(model) {
		ctx.Request.Header.Del(tracing.Header)
		return nil
	}
	parent, _ := tracing.Parse(ctx.Request.Header.Peek(tracing.Header))
	rt := &requestTrace{}
	rt.request = t.Tracer.Start(parent, "master", ctx.Time(),
		attribute.String("model", model), attribute.String("http.route", string(ctx.Path())))
	rt.forward = t.Tracer.Start(rt.request.SpanContext(), "master.forward", time.Time{})
	var buf [64]byte
	ctx.Request.Header.SetBytesV(tracing.Header, tracing.Append(buf[:0], rt.forward.SpanContext()))
	return rt
}

// end ends the spans with the answer's status (and why no worker
// answered, err).
func (rt *requestTrace) end(ctx *fasthttp.RequestCtx, err error) {
	status := ctx.Response.StatusCode()
	if err != nil {
		rt.forward.RecordError(err)
		rt.forward.SetStatus(codes.Error, err.Error())
	}
	rt.forward.End()
	// The lb sets the request id (the client's, or a new one) on the way.
	rt.request.SetAttributes(attribute.Int("http.status_code", status),
		attribute.String("request_id", string(ctx.Response.Header.Peek(lb.HeaderRequestID))))
	if status >= 500 {
		rt.request.SetStatus(codes.Error, "")
	}
	rt.request.End()
}
