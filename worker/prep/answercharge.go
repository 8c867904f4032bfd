package prep

import (
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// An answer's charge is what one infer request's answer holds in the
// decode gate's answers lane (within the large lane's room), for its
// outputs and their encoding: taken before the infer worker is asked,
// from the outputs the model declares (answercost.Expected), grown to the
// outputs that came back before they are encoded (answercost.Of), and
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
