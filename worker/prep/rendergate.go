package prep

import (
	"github.com/valyala/fasthttp"

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
// encodes on a niced thread; answers and decodes together keep within
// the gate's budget, and take turns on what CPU the small requests leave.

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
	var g *decodeGate // nil: no gate, as a handler without bodies has
	if h.bodies != nil {
		g = h.bodies.gate
	}
	cost := answerCost(outs)
	if !g.isLarge(cost) {
		render(ctx, m, req, outs)
		return
	}
	cost = max(min(cost, g.largest()), g.small+1) // large, and never over what fits
	if err := g.enter(cost, stopperFor(ctx)); err != nil {
		writeError(ctx, fasthttp.StatusGatewayTimeout, "request abandoned while its answer waited to be encoded: "+err.Error())
		return
	}
	defer g.leave(cost)
	_ = runNiced(func() error {
		render(ctx, m, req, outs)
		return nil
	})
}
