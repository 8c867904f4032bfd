package prep

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// An answer can be several times its request: a model without batching
// takes any number of rows, and JSON writes an INT64 in up to 21 bytes,
// a BOOL in 6. A gzip'd binary request of a few hundred KiB, inflated to
// max_body_bytes, then made this worker write a 200 MB answer at full CPU
// priority, eight of them at once 3.4 GB (cmd/hostile unread-answers).
// So a large answer is encoded as a large decode is (gate.go): it waits
// for the decode gate's large lane, weighing what it may write, and
// encodes on a niced thread (and so is its compression, when the client
// asks for one); answers and decodes together keep within
// the gate's budget, and take turns on what CPU the small requests leave.
// While it waits, an answer holds its outputs (or, to be compressed, its
// encoded bytes): the waiters together may hold the large lane's share
// (enterHolding), and one more is answered 503 with Retry-After rather
// than held without bound (eight unread 190 MB answers had the worker at
// 2.2 GB over rest).

// answerBytesPerDataByte bounds what a byte of an output tensor becomes
// as JSON text: an FP16 or BF16 (2 bytes) is at most 15 ("-5.9604645e-08,"),
// a BOOL (1) "false," (6), an INT8 "-128," (5), an FP32 (4) 15, an INT64
// (8) 21, a BYTES byte a \u00XX escape (6).
const answerBytesPerDataByte = 8

// answerCost is the most the answer of outs may take to write.
func answerCost(outs []tensor.Tensor) int64 {
	var n int64
	for _, t := range outs {
		n += int64(len(t.Data))
	}
	return answerBytesPerDataByte * n
}

// renderGated is render under the decode gate when the answer is large.
func (h *handler) renderGated(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, outs []tensor.Tensor) {
	cost := answerCost(outs)
	h.asLargeDecode(ctx, cost, cost/answerBytesPerDataByte, "encoded", func() { render(ctx, m, req, outs) })
}

// compressGated is encodeResponse under the decode gate when the answer
// is large and the client asked for it compressed: gzip at full priority
// took a CPU for seconds per answer, beside the small requests.
func (h *handler) compressGated(ctx *fasthttp.RequestCtx) {
	if ctx.Response.StatusCode() != fasthttp.StatusOK ||
		httpcoding.Negotiate(ctx.Request.Header.Peek(fasthttp.HeaderAcceptEncoding)) == httpcoding.Identity {
		encodeResponse(ctx) // Vary at most
		return
	}
	n := int64(len(ctx.Response.Body()))
	h.asLargeDecode(ctx, n, n, "compressed", func() { encodeResponse(ctx) })
}

// asLargeDecode runs fn, which writes ctx's answer, at once when cost is
// a small decode's; otherwise in the gate's large lane (weighing cost,
// never over what fits) on a niced thread, holding held bytes while it
// waits; or answers 503 when the waiters hold the lane's share, 504 when
// the client went away while it waited.
func (h *handler) asLargeDecode(ctx *fasthttp.RequestCtx, cost, held int64, what string, fn func()) {
	var g *decodeGate // nil: no gate, as a handler without bodies has
	if h.bodies != nil {
		g = h.bodies.gate
	}
	if !g.isLarge(cost) {
		fn()
		return
	}
	cost = max(min(cost, g.largest()), g.small+1)
	if err := g.enterHolding(cost, held, stopperFor(ctx)); err != nil {
		if errors.Is(err, errWaitFull) {
			ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
			writeError(ctx, fasthttp.StatusServiceUnavailable, err.Error())
			return
		}
		writeError(ctx, fasthttp.StatusGatewayTimeout, "request abandoned while its answer waited to be "+what+": "+err.Error())
		return
	}
	defer g.leave(cost)
	_ = runNiced(func() error {
		fn()
		return nil
	})
}
