package prep

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestUntracedCostsNoAllocation: with tracing off (no exporter), every
// tracing call on the request path is a nil check: no allocation, even
// for a request that carries a sampled traceparent.
func TestUntracedCostsNoAllocation(t *testing.T) {
	h := &handler{}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	var up fasthttp.Request
	if n := testing.AllocsPerRun(100, func() {
		h.beginTrace(&ctx, "m", time.Time{})
		pt := h.traceOf(&ctx)
		t0 := pt.now()
		pt.stage("prep.parse", t0)
		pt.cache(t0, true)
		pt.decode(t0, 3)
		s := pt.forward(&up)
		pt.endForward(s, nil)
		pt.end(&ctx)
	}); n != 0 {
		t.Fatalf("%v allocations per untraced request, want 0", n)
	}
	if len(up.Header.Peek("traceparent")) != 0 {
		t.Fatal("an untraced request's upstream got a traceparent")
	}
}
