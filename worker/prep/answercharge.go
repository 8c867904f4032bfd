package prep

import (
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// An answer's charge is what one infer request's answer holds in the
// decode gate's answers lane (within the large lane's room), for its
// outputs and their encoding: taken before the infer worker is asked,
// from the outputs the model declares (expectedAnswer), grown to the
// outputs that came back before they are encoded (answerCost), and
// released once the answer has been written, when fasthttp closes the
// request's user values (a *budget.Charge is an io.Closer). Neither
// step waits: an answer that finds no room is answered 503 with
// Retry-After, because a request waiting for room holds its inflated
// body and, once run, its outputs (unread-answers: eight 190 MB JSON
// answers, each beside its 67 MB request and outputs, took the worker
// 2 GB over rest). An answer up to a small decode's cost takes no
// charge (it is written at once, as before); one over the lane's share
// takes all of it, alone.

// answerChargeKey is the request's user value that holds its answer's
// *budget.Charge.
type answerChargeKey struct{}

// reserveAnswer grows ctx's answer charge to cost bytes: false when the
// lane lacks them, the charge unchanged. An answer that needs no room
// takes none, so that small requests pay no allocation.
func (h *handler) reserveAnswer(ctx *fasthttp.RequestCtx, cost int64) bool {
	var g *decodegate.Gate
	if h.bodies != nil {
		g = h.bodies.gate
	}
	if c, ok := ctx.UserValue(answerChargeKey{}).(*budget.Charge); ok {
		return c.Grow(g.LargeCost(cost)) == nil
	}
	if !g.IsLarge(cost) {
		return true
	}
	c, err := g.ReserveAnswer(cost)
	if err != nil {
		return false
	}
	ctx.SetUserValue(answerChargeKey{}, c) // closed once the answer is written
	return true
}

// roomHeld is what ctx's answer charge holds (0: none).
func roomHeld(ctx *fasthttp.RequestCtx) int64 {
	c, _ := ctx.UserValue(answerChargeKey{}).(*budget.Charge)
	return c.Bytes()
}

// refuseAnswer answers a request whose answer found no room, and gives
// back the room it held (an image request's earlier chunks, the outputs
// it had before they were encoded): its short error needs none.
func refuseAnswer(ctx *fasthttp.RequestCtx) {
	if c, ok := ctx.UserValue(answerChargeKey{}).(*budget.Charge); ok {
		c.Release()
		ctx.RemoveUserValue(answerChargeKey{}) // a later answer charges afresh
	}
	ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	writeError(ctx, fasthttp.StatusServiceUnavailable, "server busy: the answers this prep worker holds fill its large lane "+
		"(prep.max_decode_bytes, less room kept for small images); retry later")
}

// answerTextBytes is the most JSON text an element of each datatype
// takes, its comma included: an INT64 "-9223372036854775808," 21, an
// FP32 (FP16 and BF16 are written as FP32) up to 9 digits,
// "-1.00000075e-36," 16, an FP64 25, a BOOL "false," 6. BYTES elements
// vary: see answerCost.
var answerTextBytes = [...]int64{
	tensor.Bool: 6, tensor.Uint8: 4, tensor.Uint16: 6, tensor.Uint32: 11, tensor.Uint64: 21,
	tensor.Int8: 5, tensor.Int16: 7, tensor.Int32: 12, tensor.Int64: 21,
	tensor.FP16: 16, tensor.FP32: 16, tensor.FP64: 25, tensor.BF16: 16,
}

// bytesTextPerByte bounds the JSON text of a byte of a BYTES element
// (a \u00XX escape), its length prefix counted as bytes too.
const bytesTextPerByte = 6

// answerFields is room for the JSON around the tensors.
const answerFields = 4 << 10

// answerCost is the memory the answer of outs to req holds: the outputs,
// and the answer written from them (binary: their bytes; JSON: the
// longest text of each element).
func answerCost(req *v2.InferRequest, outs []tensor.Tensor) int64 {
	n := int64(answerFields)
	for i := range outs {
		t := &outs[i]
		data := int64(len(t.Data))
		switch _, bin := req.SelectOutput(t.Name); {
		case bin:
			n += 2 * data
		case t.DType == tensor.Bytes:
			n += (1 + bytesTextPerByte) * data
		default:
			n += data + data/int64(max(t.DType.Size(), 1))*textBytes(t.DType)
		}
	}
	return n
}

// textBytes is answerTextBytes of d (0 for BYTES and unknown types).
func textBytes(d tensor.DType) int64 {
	if int(d) < len(answerTextBytes) {
		return answerTextBytes[d]
	}
	return 0
}

// expectedAnswer is answerCost of the outputs m declares for req, their
// first dimension, when variable, the rows of req's first input; an
// output whose size the declaration leaves open (another variable
// dimension, BYTES) counts nothing here, and is charged once it comes
// back. The rows are the client's word (a [2^40,0] input of a [-1,-1]
// model carries no data), so the sums saturate at answerCeiling, which
// takes the whole lane, rather than wrap to nothing.
func expectedAnswer(m *model, req *v2.InferRequest) int64 {
	rows := int64(1)
	if len(req.Inputs) > 0 && len(req.Inputs[0].Shape) > 0 {
		rows = req.Inputs[0].Shape[0]
	}
	n := int64(answerFields)
	for _, o := range m.md.Outputs {
		include, bin := req.SelectOutput(o.Name)
		elems, ok := declaredElements(o.Shape, rows)
		if !include || !ok || o.DType == tensor.Bytes {
			continue
		}
		size := int64(o.DType.Size())
		if bin {
			n = min(n+saturatedProduct(elems, 2*size), answerCeiling)
		} else {
			n = min(n+saturatedProduct(elems, size+textBytes(o.DType)), answerCeiling)
		}
	}
	return n
}

// answerCeiling bounds expectedAnswer: above any lane, and twice it
// still fits an int64.
const answerCeiling = 1 << 61

// saturatedProduct is a*b for a, b >= 0, at most answerCeiling.
func saturatedProduct(a, b int64) int64 {
	if b != 0 && a > answerCeiling/b {
		return answerCeiling
	}
	return a * b
}

// chunksAnswer is expectedAnswer of the first k chunks of an image
// request, each like chunk (one input tensor of the chunk's images): an
// image model's outputs are declared per chunk (a fixed batch of 1 per
// image, or the chunk's rows), and the chunks' outputs are stacked into
// one answer.
func chunksAnswer(m *model, chunk *v2.InferRequest, k int) int64 {
	return min(answerFields+saturatedProduct(int64(k), expectedAnswer(m, chunk)-answerFields), answerCeiling)
}

// declaredElements is the element count of a declared shape whose first
// dimension, if variable, is rows (at most answerCeiling); false when
// another is variable.
func declaredElements(shape []int64, rows int64) (int64, bool) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 && i == 0 {
			d = rows
		}
		if d < 0 {
			return 0, false
		}
		n = saturatedProduct(n, d)
	}
	return n, true
}
