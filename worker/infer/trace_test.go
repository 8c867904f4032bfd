package infer

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
)

// TestUntracedCostsNoAllocation: with tracing off (no exporter) the
// infer worker's tracing calls are nil checks: no allocation, and the
// batcher is given no Timing to fill in.
func TestUntracedCostsNoAllocation(t *testing.T) {
	s := &server{}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	var r batch.Request
	if n := testing.AllocsPerRun(100, func() {
		it := s.beginTrace(&ctx, time.Time{})
		it.timed(&r)
		it.end(&ctx, "m", nil)
	}); n != 0 {
		t.Fatalf("%v allocations per untraced request, want 0", n)
	}
	if r.Timing != nil {
		t.Fatal("an untraced request asked the batcher for its timing")
	}
}
