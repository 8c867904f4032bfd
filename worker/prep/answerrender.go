package prep

import (
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker/prep/answercost"
	"github.com/supervisor-dev/supervisor/worker/prep/nicethread"
)

// An answer can be several times its request: a model without batching
// takes any number of rows, and JSON writes an INT64 in up to 21 bytes,
// a BOOL in 6. A gzip'd binary request of a few hundred KiB, inflated to
// max_body_bytes, then made this worker write a 200 MB answer at full CPU
// priority, eight of them at once 3.4 GB (cmd/hostile unread-answers).
// So a large answer holds room in the decode gate's large lane, as a
// large decode does (worker/prep/decodegate), from before its infer worker is asked
// until it is written (answercharge.go), and is encoded (and compressed,
// when the client asks) on a niced thread: answers and decodes together
// keep within the gate's budget, and take turns on what CPU the small
// requests leave. An answer that finds no room is answered 503 with
// Retry-After at once, holding nothing.

// renderGated is render within ctx's answer room, grown to what outs
// take; 503 when the lane lacks it.
func (h *handler) renderGated(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, outs []tensor.Tensor) {
	if !h.reserveAnswer(ctx, answercost.Of(req, outs)) {
		refuseAnswer(ctx)
		return
	}
	runIn(roomHeld(ctx) > 0, func() { render(ctx, m, req, outs) })
}

// compressGated is encodeResponse within ctx's answer room when the
// answer is large: gzip at full priority took a CPU for seconds per
// answer, beside the small requests. The room grows by the answer's size
// for the compressed copy; without room for it the answer goes
// uncompressed, as Accept-Encoding allows.
func (h *handler) compressGated(ctx *fasthttp.RequestCtx) {
	if ctx.Response.StatusCode() != fasthttp.StatusOK ||
		httpcoding.Negotiate(ctx.Request.Header.Peek(fasthttp.HeaderAcceptEncoding)) == httpcoding.Identity {
		encodeResponse(ctx) // Vary at most
		return
	}
	if !h.reserveAnswer(ctx, roomHeld(ctx)+int64(len(ctx.Response.Body()))) {
		ctx.Response.Header.Set(fasthttp.HeaderVary, fasthttp.HeaderAcceptEncoding)
		return
	}
	runIn(roomHeld(ctx) > 0, func() { encodeResponse(ctx) })
}

// runIn runs fn on a niced thread when its answer holds room in the
// large lane (large), else at once.
func runIn(large bool, fn func()) {
	if !large {
		fn()
		return
	}
	_ = nicethread.Run(func() error {
		fn()
		return nil
	})
}
