package prep

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/worker"
)

// TestInferExitIsLoggedAtWarn: an infer worker that exits with the
// request (here it closes the connection unanswered) gets the request
// answered 502 with worker.InferExitedHeader, and the prep worker logs
// "infer worker request failed" at warn, not error: the exit is handled
// (the master logs the worker's exit at error level and sends the
// request again or answers it), so an error line here was a second
// error line for one crash, which log-errors lists had to expect.
func TestInferExitIsLoggedAtWarn(t *testing.T) {
	h, _ := typesHandlerFor(t, testGate(1, 1<<20, 2<<20), func(ctx *fasthttp.RequestCtx) {
		ctx.HijackSetNoResponse(true) // the worker dies: the connection closes unanswered
		ctx.Hijack(func(net.Conn) {})
	})
	var logs bytes.Buffer
	h.log = zerolog.New(&logs)
	ctx := postTypes(h, 1)
	if s := ctx.Response.StatusCode(); s != fasthttp.StatusBadGateway || len(ctx.Response.Header.Peek(worker.InferExitedHeader)) == 0 {
		t.Fatalf("its infer worker exited: %d %q, want 502 with %s", s, ctx.Response.Body(), worker.InferExitedHeader)
	}
	ctx.ResetUserValues()
	var failed string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, `"message":"infer worker request failed"`) {
			failed = line
		}
		if strings.Contains(line, `"level":"error"`) {
			t.Errorf("error-level line for a handled infer worker exit: %s", line)
		}
	}
	if !strings.Contains(failed, `"level":"warn"`) {
		t.Errorf("the failed request's line: %q, want it at warn", failed)
	}
}
