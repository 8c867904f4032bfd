package prep

import (
	"bytes"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// int64Output is an INT64 [rows,4] output of zeros.
func int64Output(rows int) []tensor.Tensor {
	return []tensor.Tensor{{Name: "masked", DType: tensor.Int64, Shape: []int64{int64(rows), 4}, Data: make([]byte, rows*32)}}
}

// TestLargeAnswerWaitsForTheGate: an answer that may write more than a
// small decode costs is encoded in the decode gate's large lane, so with
// the lane held it waits, unwritten, while a small answer is written at
// once; it is written when the lane frees, and gives its place back.
func TestLargeAnswerWaitsForTheGate(t *testing.T) {
	g := testGate(1, 1<<20, 1<<20+64<<20)
	h := &handler{bodies: &bodyDecoder{gate: g}}
	m := &model{md: tensor.Metadata{Name: "types"}}
	if err := g.enter(g.largest(), stopper{}); err != nil {
		t.Fatal(err)
	}
	var large fasthttp.RequestCtx
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.renderGated(&large, m, &v2.InferRequest{}, int64Output(8192)) // 1 MiB of data, up to 6 MiB of JSON
	}()
	waitState(t, g, gateState{LargeIn: 1, LargeBytes: g.largest(), LargeWaiting: 1, HeldWaiting: 8192 * 32})

	var small fasthttp.RequestCtx
	h.renderGated(&small, m, &v2.InferRequest{}, int64Output(4))
	if !bytes.HasPrefix(small.Response.Body(), []byte(`{"model_name":"types"`)) {
		t.Fatalf("a small answer beside a held large lane: %.80q, want it written at once", small.Response.Body())
	}
	select {
	case <-done:
		t.Fatal("a large answer was encoded while the gate's large lane was full")
	default:
	}

	g.leave(g.largest())
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the large answer was not encoded within 30s of the lane freeing")
	}
	if b := large.Response.Body(); !bytes.HasPrefix(b, []byte(`{"model_name":"types"`)) || len(b) < 8192*4*2 {
		t.Fatalf("the large answer: %d bytes %.80q, want the JSON of 8192x4 zeros", len(b), b)
	}
	waitState(t, g, gateState{})
}

// TestLargeAnswerCompressedInTheLane: a large answer the client wants
// gzip'd is compressed in the gate's large lane: with the lane held it
// stays uncompressed, a small one is compressed at once, and it is
// compressed once the lane frees.
func TestLargeAnswerCompressedInTheLane(t *testing.T) {
	g := testGate(1, 1<<20, 1<<20+64<<20)
	h := &handler{bodies: &bodyDecoder{gate: g}}
	answer := func(n int) *fasthttp.RequestCtx {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.Set(fasthttp.HeaderAcceptEncoding, "gzip")
		ctx.SetBody(bytes.Repeat([]byte("0,"), n/2))
		return &ctx
	}
	if err := g.enter(g.largest(), stopper{}); err != nil {
		t.Fatal(err)
	}
	large := answer(4 << 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.compressGated(large)
	}()
	waitState(t, g, gateState{LargeIn: 1, LargeBytes: g.largest(), LargeWaiting: 1, HeldWaiting: 4 << 20})
	small := answer(1 << 10)
	h.compressGated(small)
	if enc := string(small.Response.Header.Peek(fasthttp.HeaderContentEncoding)); enc != "gzip" {
		t.Fatalf("a small answer beside a held large lane: Content-Encoding %q, want gzip at once", enc)
	}
	g.leave(g.largest())
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the large answer was not compressed within 30s of the lane freeing")
	}
	if enc, n := string(large.Response.Header.Peek(fasthttp.HeaderContentEncoding)), len(large.Response.Body()); enc != "gzip" || n >= 4<<20 {
		t.Fatalf("the large answer: Content-Encoding %q, %d bytes; want gzip, smaller than 4 MiB", enc, n)
	}
	waitState(t, g, gateState{})
}

// TestAnswerCostBoundsTheJSON: answerCost is at least the JSON written
// for each datatype's longest values.
func TestAnswerCostBoundsTheJSON(t *testing.T) {
	worst := map[tensor.DType][]byte{
		tensor.Int64: {1, 0, 0, 0, 0, 0, 0, 0x80}, // -9223372036854775807
		tensor.Int8:  {0x80},                      // -128
		tensor.Bool:  {0},                         // false
		tensor.FP32:  {0x01, 0x00, 0x80, 0x80},    // a negative subnormal-ish FP32
		tensor.FP16:  {0x01, 0x80},                // -5.9604645e-08
		tensor.Bytes: tensor.AppendBytesElement(nil, []byte{1}),
	}
	for dt, elem := range worst {
		outs := []tensor.Tensor{{Name: "y", DType: dt, Shape: []int64{64}, Data: bytes.Repeat(elem, 64)}}
		body, _ := v2.AppendInferResponse(nil, "m", &v2.InferRequest{}, outs)
		if got, bound := int64(len(body)), answerCost(outs)+256; got > bound {
			t.Errorf("%v: %d bytes of JSON, over answerCost %d (+256 for the fields)", dt, got, bound)
		}
	}
}

// TestLargeAnswersWaitingAreBounded: while the large lane is held, a
// large answer waits holding its outputs; one more whose outputs would
// take those waiting past the lane's share is answered 503 with
// Retry-After at once, its outputs let go, not held.
func TestLargeAnswersWaitingAreBounded(t *testing.T) {
	g := testGate(1, 1<<20, 1<<20+2<<20) // large lane: 2 MiB
	h := &handler{bodies: &bodyDecoder{gate: g}}
	m := &model{md: tensor.Metadata{Name: "types"}}
	if err := g.enter(g.largest(), stopper{}); err != nil {
		t.Fatal(err)
	}
	var waiting fasthttp.RequestCtx
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.renderGated(&waiting, m, &v2.InferRequest{}, int64Output(40000)) // 1.25 MiB of outputs
	}()
	waitState(t, g, gateState{LargeIn: 1, LargeBytes: g.largest(), LargeWaiting: 1, HeldWaiting: 40000 * 32})
	var refused fasthttp.RequestCtx
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		h.renderGated(&refused, m, &v2.InferRequest{}, int64Output(40000))
	}()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		g.leave(g.largest())
		t.Fatal("a second large answer past the share was held waiting, not refused")
	}
	if refused.Response.StatusCode() != fasthttp.StatusServiceUnavailable || len(refused.Response.Header.Peek(fasthttp.HeaderRetryAfter)) == 0 ||
		!bytes.Contains(refused.Response.Body(), []byte("prep.max_decode_bytes")) {
		t.Errorf("a second large answer beside 1.25 MiB of outputs waiting, share 2 MiB: %d %.200q, want 503 + Retry-After naming the budget",
			refused.Response.StatusCode(), refused.Response.Body())
	}
	g.leave(g.largest())
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting answer was not encoded once the lane freed")
	}
	if waiting.Response.StatusCode() != fasthttp.StatusOK {
		t.Errorf("the waiting answer: %d, want 200", waiting.Response.StatusCode())
	}
	waitState(t, g, gateState{})
}
