package prep

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/osmem"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/imageinput"
	"github.com/supervisor-dev/supervisor/worker/prep/nicethread"
)

// Compressed request bodies (Content-Encoding gzip or deflate) are
// decompressed here, before anything parses them, into a buffer of at
// most max_body_bytes: the decompressed size is what max_body_bytes
// bounds, and a bomb stops at it (413) having allocated no more. The
// master counted only the compressed bytes against its body budget, so
// the decompressed bytes every request of this worker holds at once are
// bounded apart: decodedBudgetFactor × max_body_bytes; past it a request
// gets 503 with Retry-After. Triton's Inference-Header-Content-Length
// counts in the decompressed body, as the binary extension's header does
// in Triton. Responses to infer requests are compressed as the client's
// Accept-Encoding asks (httpcoding.Negotiate, Triton's choice), every
// successful one whatever its size, as Triton does.

// decodedBudgetFactor sizes the decompressed-bytes budget of a prep
// worker in multiples of max_body_bytes: 4 of the default 64 MiB bodies,
// 256 MiB, at once.
const decodedBudgetFactor = 4

// largeInflateBytes is the compressed size from which inflating a body
// counts as a large decode: it passes the worker's decode gate as one
// (weighing what it may hold, max_body_bytes, so one at a time per CPU
// beside large images, memory within the decode budget) and runs on a
// niced thread (nicethread.Run). A bomb of a few hundred KiB on the wire is
// max_body_bytes of inflating, a hundred milliseconds and more of CPU
// each; several at once at the worker's priority took every Go P and CPU
// from the worker's other requests (MLP p99 17–35× steady under
// gzip-bomb). Typical compressed requests are far smaller and inflate at
// once, inline; a large legitimate one waits its turn and inflates slower
// under load, never stops.
const largeInflateBytes = 16 << 10

// bodyDecoder decompresses request bodies within max_body_bytes and the
// worker's budget of decompressed bytes (an internal/budget lane: each
// decompression a charge, released once its request is done).
type bodyDecoder struct {
	gate  *decodegate.Gate // the worker's decode gate (nil: none), for large bodies
	limit int              // max_body_bytes
	// bodies holds lane, the decompressed bytes held at once by all
	// requests (nil: unbounded).
	bodies *budget.Budget
	lane   *budget.Lane
	// burst hands the inflated buffers (and pooled chunks) back to the
	// OS once a burst of bombs or large bodies is over (internal/osmem).
	burst osmem.Gauge
	// slot records each decompression as at work (atwork.go); nil: none.
	slot *shm.Slot
	// regions reads the inputs the master sends by reference
	// (regions.go); nil: none.
	regions *sysshm.Reader
}

func newBodyDecoder(maxBody int64) *bodyDecoder {
	if maxBody <= 0 {
		maxBody = 64 << 20
	}
	return bodyDecoderWithin(int(maxBody), decodedBudgetFactor*maxBody)
}

// bodyDecoderWithin decompresses bodies of up to limit bytes, holding
// at most room bytes at once.
func bodyDecoderWithin(limit int, room int64) *bodyDecoder {
	d := &bodyDecoder{limit: limit}
	d.lane = &budget.Lane{Name: "decompressed bodies", Room: room, Burst: &d.burst, BurstBytes: decodegate.BurstBytes}
	d.bodies = budget.New(d.lane)
	return d
}

// charge is a new, empty charge of the decompressed bytes' lane (nil,
// which bounds nothing, for a decoder without one). Nobody waits in the
// lane, so it is never refused.
func (d *bodyDecoder) charge() *budget.Charge {
	if d.bodies == nil {
		return nil
	}
	c, _ := d.bodies.Reserve(0, d.lane)
	return c
}

// held is the decompressed bytes held now.
func (d *bodyDecoder) held() int64 {
	if d.lane == nil {
		return 0
	}
	return d.lane.State().Bytes
}

// decode replaces a compressed request body with its decompressed bytes
// and drops Content-Encoding, or one the master sent inputs of by
// reference with the bytes read from their regions (splice), so every
// later reader sees plain bytes. The
// release it returns gives the bytes back to the budget, once the request
// no longer needs its body. On failure it answers the request (415, 413,
// 400 or 503) and returns ok false.
func (d *bodyDecoder) decode(ctx *fasthttp.RequestCtx) (release func(), ok bool) {
	if raw := ctx.Request.Header.Peek(sysshm.RefsHeader); raw != nil {
		return d.splice(ctx, raw) // never compressed (the master's)
	}
	c, err := httpcoding.ParseContentEncoding(ctx.Request.Header.Peek(fasthttp.HeaderContentEncoding))
	if err != nil {
		writeError(ctx, fasthttp.StatusUnsupportedMediaType, err.Error())
		return nil, false
	}
	if c == httpcoding.Identity {
		return func() {}, true
	}
	charge := d.charge()
	body, err := d.inflate(ctx, c, charge)
	if err != nil {
		charge.Release()
		d.refuse(ctx, c, err)
		return nil, false
	}
	release = charge.Release
	ctx.Request.SetBodyRaw(body)
	ctx.Request.Header.Del(fasthttp.HeaderContentEncoding)
	return release, true
}

// inflate decompresses ctx's body: a small one at once, a large one as a
// large decode of the gate (see largeInflateBytes).
func (d *bodyDecoder) inflate(ctx *fasthttp.RequestCtx, c httpcoding.Coding, held *budget.Charge) (body []byte, err error) {
	run := func() error {
		defer atWork(d.slot, ctx).End()
		body, err = httpcoding.Decompress(c, ctx.PostBody(), d.limit, held)
		return err
	}
	if len(ctx.PostBody()) < largeInflateBytes {
		return body, run()
	}
	cost := int64(d.limit)
	if d.gate != nil {
		cost = d.gate.LargeCost(cost)
	}
	charge, err := d.gate.Enter(cost, stopperFor(ctx, d.slot).Check)
	if err != nil {
		return nil, &imageinput.StoppedError{Reason: err}
	}
	defer charge.Release()
	if err := nicethread.Run(run); err != nil {
		return nil, err
	}
	return body, nil
}

// refuse answers a body that could not be decompressed.
func (d *bodyDecoder) refuse(ctx *fasthttp.RequestCtx, c httpcoding.Coding, err error) {
	var se *imageinput.StoppedError
	switch {
	case errors.As(err, &se):
		writeError(ctx, fasthttp.StatusGatewayTimeout, "request abandoned while it waited to be decompressed: "+se.Reason.Error())
	case errors.Is(err, httpcoding.ErrTooLarge):
		writeError(ctx, fasthttp.StatusRequestEntityTooLarge,
			fmt.Sprintf("the %s request body decompresses to more than max_body_bytes (%d bytes)", c, d.limit))
	case errors.Is(err, httpcoding.ErrBudget):
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable,
			"server busy: decompressed request bodies in flight fill this prep worker's budget; retry later")
	default:
		writeError(ctx, fasthttp.StatusBadRequest, fmt.Sprintf("Content-Encoding %s: %v", c, err))
	}
}

// encodeResponse compresses a successful infer response as the client's
// Accept-Encoding asks. Inference-Header-Content-Length keeps counting in
// the uncompressed body, as Triton's does.
func encodeResponse(ctx *fasthttp.RequestCtx) {
	if ctx.Response.StatusCode() != fasthttp.StatusOK {
		return
	}
	ctx.Response.Header.Set(fasthttp.HeaderVary, fasthttp.HeaderAcceptEncoding)
	c := httpcoding.Negotiate(ctx.Request.Header.Peek(fasthttp.HeaderAcceptEncoding))
	if c == httpcoding.Identity {
		return
	}
	ctx.Response.SetBodyRaw(httpcoding.Compress(c, ctx.Response.Body()))
	ctx.Response.Header.Set(fasthttp.HeaderContentEncoding, c.String())
}
