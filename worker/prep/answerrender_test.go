package prep

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker/prep/answercost"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// int64Output is an INT64 [rows,4] output of zeros.
func int64Output(rows int) []tensor.Tensor {
	return []tensor.Tensor{{Name: "masked", DType: tensor.Int64, Shape: []int64{int64(rows), 4}, Data: make([]byte, rows*32)}}
}

// TestLargeAnswerNeedsRoom: an answer that takes more than a small
// decode costs holds room in the decode gate's large lane until it is
// written (its request's user values closed). With the lane held, it is
// answered 503 with Retry-After at once, holding nothing, while a small
// answer is written; with the lane free it is written and holds its
// room until then.
func TestLargeAnswerNeedsRoom(t *testing.T) {
	g := testGate(1, 1<<20, 1<<20+64<<20)
	h := &handler{bodies: &bodyDecoder{gate: g}}
	m := &model{md: tensor.Metadata{Name: "types"}}
	full := mustEnter(t, g, g.Largest())
	var refused fasthttp.RequestCtx
	h.renderGated(&refused, m, &v2.InferRequest{}, int64Output(16384)) // 2 MiB of data, up to 1.3 MiB of JSON
	if refused.Response.StatusCode() != fasthttp.StatusServiceUnavailable || len(refused.Response.Header.Peek(fasthttp.HeaderRetryAfter)) == 0 ||
		!bytes.Contains(refused.Response.Body(), []byte("prep.max_decode_bytes")) {
		t.Errorf("a large answer beside a full lane: %d %.200q, want 503 + Retry-After naming the budget",
			refused.Response.StatusCode(), refused.Response.Body())
	}
	refused.ResetUserValues()
	var small fasthttp.RequestCtx
	h.renderGated(&small, m, &v2.InferRequest{}, int64Output(4))
	if !bytes.HasPrefix(small.Response.Body(), []byte(`{"model_name":"types"`)) {
		t.Fatalf("a small answer beside a full lane: %.80q, want it written at once", small.Response.Body())
	}
	if r := small.UserValue(answerChargeKey{}); r != nil {
		t.Errorf("a small answer made a room %+v, want none (no allocation per small request)", r)
	}
	small.ResetUserValues()
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: g.Largest()})

	full.Release()
	var large fasthttp.RequestCtx
	outs := int64Output(16384)
	h.renderGated(&large, m, &v2.InferRequest{}, outs)
	if b := large.Response.Body(); !bytes.HasPrefix(b, []byte(`{"model_name":"types"`)) || len(b) < 16384*4*2 {
		t.Fatalf("the large answer: %d bytes %.80q, want the JSON of 16384x4 zeros", len(b), b)
	}
	// Bytes of the lane, no decode place.
	waitState(t, g, decodegate.State{LargeBytes: answercost.Of(&v2.InferRequest{}, outs)})
	large.ResetUserValues() // as fasthttp does once the answer is written
	waitState(t, g, decodegate.State{})
}

// TestLargeAnswerCompressedInItsRoom: a large answer the client wants
// gzip'd is compressed when the lane has room for the compressed copy
// too, and goes uncompressed (Vary set) when it has not; a small one is
// compressed at once.
func TestLargeAnswerCompressedInItsRoom(t *testing.T) {
	g := testGate(1, 1<<20, 1<<20+64<<20)
	h := &handler{bodies: &bodyDecoder{gate: g}}
	answer := func(n int) *fasthttp.RequestCtx {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.Set(fasthttp.HeaderAcceptEncoding, "gzip")
		ctx.SetBody(bytes.Repeat([]byte("0,"), n/2))
		return &ctx
	}
	filled := mustEnter(t, g, g.Largest())
	full := answer(4 << 20)
	h.compressGated(full)
	if enc, n := string(full.Response.Header.Peek(fasthttp.HeaderContentEncoding)), len(full.Response.Body()); enc != "" || n != 4<<20 ||
		len(full.Response.Header.Peek(fasthttp.HeaderVary)) == 0 {
		t.Fatalf("a large answer beside a full lane: Content-Encoding %q, %d bytes; want it uncompressed, with Vary", enc, n)
	}
	small := answer(1 << 10)
	h.compressGated(small)
	if enc := string(small.Response.Header.Peek(fasthttp.HeaderContentEncoding)); enc != "gzip" {
		t.Fatalf("a small answer beside a full lane: Content-Encoding %q, want gzip at once", enc)
	}
	filled.Release()
	large := answer(4 << 20)
	h.compressGated(large)
	if enc, n := string(large.Response.Header.Peek(fasthttp.HeaderContentEncoding)), len(large.Response.Body()); enc != "gzip" || n >= 4<<20 {
		t.Fatalf("the large answer: Content-Encoding %q, %d bytes; want gzip, smaller than 4 MiB", enc, n)
	}
	waitState(t, g, decodegate.State{LargeBytes: 4 << 20}) // bytes, no decode place
	for _, ctx := range []*fasthttp.RequestCtx{full, small, large} {
		ctx.ResetUserValues()
	}
	waitState(t, g, decodegate.State{})
}

// TestAnswerCostBoundsTheJSON: answercost.Of is at least the outputs and
// the JSON written for each datatype's longest values, and answercost.Expected
// (from the declared outputs) at least answercost.Of; enough rows that a
// byte short an element outgrows answercost.Fields' slack (a float32 takes up
// to 9 digits: "-1.00000075e-36," is 16 bytes).
func TestAnswerCostBoundsTheJSON(t *testing.T) {
	worst := map[tensor.DType][]byte{
		tensor.Int64:  {1, 0, 0, 0, 0, 0, 0, 0x80}, // -9223372036854775807
		tensor.Uint64: bytes.Repeat([]byte{0xff}, 8),
		tensor.Int8:   {0x80}, // -128
		tensor.Bool:   {0},    // false
		tensor.FP32:   binary.LittleEndian.AppendUint32(nil, math.Float32bits(-1.00000075e-36)),
		tensor.FP16:   {0x01, 0x80}, // -5.9604645e-08
		tensor.FP64:   {1, 0, 0, 0, 0, 0, 0x10, 0x80},
		tensor.Bytes:  tensor.AppendBytesElement(nil, []byte{1}),
	}
	for dt, elem := range worst {
		const rows = 1 << 13
		outs := []tensor.Tensor{{Name: "y", DType: dt, Shape: []int64{rows, 1}, Data: bytes.Repeat(elem, rows)}}
		req := &v2.InferRequest{Inputs: []tensor.Tensor{{Shape: []int64{rows}}}}
		body, _ := v2.AppendInferResponse(nil, "m", req, outs)
		if got, bound := int64(len(body)+len(outs[0].Data)), answercost.Of(req, outs); got > bound {
			t.Errorf("%v: %d bytes of JSON and outputs, over answercost.Of %d", dt, got, bound)
		}
		m := &model{md: tensor.Metadata{Outputs: []tensor.Spec{{Name: "y", DType: dt, Shape: []int64{-1, 1}}}}}
		if exp, cost := answercost.Expected(m.md.Outputs, req), answercost.Of(req, outs); dt != tensor.Bytes && exp < cost {
			t.Errorf("%v: answercost.Expected %d, under answercost.Of %d", dt, exp, cost)
		}
	}
}
