package front

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tracing"
)

// BenchmarkForwardHop sends one small inference request after another
// through the front (header-time admission, body read, forward through
// the lb over a Unix socket) to a stand-in prep worker: the master's hop.
// tracing-off is the default (no tracing section); tracing-unsampled has
// tracing configured with trace_level OFF, so each request is asked of
// the Sampler and sent without a traceparent. Allocations count every
// goroutine: client, front, lb and the stand-in.
func BenchmarkForwardHop(b *testing.B) {
	b.Run("tracing-off", func(b *testing.B) { benchmarkForwardHop(b, startFront(b, nil)) })
	b.Run("tracing-unsampled", func(b *testing.B) {
		benchmarkForwardHop(b, startFront(b, nil, func(o *Options) {
			o.Tracing = &Tracing{Sampler: tracing.NewSampler(tracing.Defaults())}
		}))
	})
}

func benchmarkForwardHop(b *testing.B, h *frontHarness) {
	c := &fasthttp.HostClient{Addr: h.addr}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + h.addr + "/v2/models/mlp/infer")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set(tracing.Header, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.SetBodyString(`{"inputs":[]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != fasthttp.StatusOK {
			b.Fatalf("status %d body %q", resp.StatusCode(), resp.Body())
		}
	}
}
