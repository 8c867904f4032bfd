package front

import (
	"context"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
)

// ServeInternal serves a request built inside the master for the RPC
// whose context is rpc (grpcfront.Handler), decided as a public
// request's header is: route, API key and rate, body size, readiness,
// deadline, max_in_flight and the body budget. Its body is already whole
// in memory (the RPC's message, bounded by gRPC at max_body_bytes), so
// there is nothing to read. Once rpc ends nobody waits for the answer:
// the request is abandoned (clientgone.go).
func (f *Front) ServeInternal(rpc context.Context, ctx *fasthttp.RequestCtx) {
	defer f.recoverHandler(ctx)
	start := time.Now()
	c := f.cfg()
	v := f.decide(c, &ctx.Request.Header)
	defer f.finish(v)
	switch {
	case v.status != 0:
		f.refuse(ctx, v.refusal, false)
	case v.proxied:
		f.proxyInference(ctx, c, v.model, v.deadline, lb.ContextClient{Ctx: rpc}, nil) // the RPC front holds its answers itself
	default:
		f.serveLocal(ctx)
	}
	f.logRequest(ctx, time.Since(start))
}

// AdmitMessage is the part of decide an inference RPC's header can
// settle before gRPC reads its message (up to max_body_bytes): readiness,
// the API key (not its rate, which decide takes once per request) and
// max_in_flight as it stands (decide takes the place). It holds nothing.
func (f *Front) AdmitMessage(h *fasthttp.RequestHeader) (status int, msg string, retryAfter bool) {
	if !f.serving.Load() {
		return fasthttp.StatusServiceUnavailable, "the server is not ready: workers are starting or stopping", false
	}
	if ks := f.keys.Load(); ks != nil {
		if _, r := ks.authenticate(h); r.status != 0 {
			return r.status, r.msg, false
		}
	}
	if limit := int64(f.cfg().Limits.MaxInFlight); limit > 0 && f.inFlight.Load() >= limit {
		return fasthttp.StatusServiceUnavailable, fmt.Sprintf("server busy: %d requests in flight (limits.max_in_flight); retry later", limit), true
	}
	return fasthttp.StatusOK, "", false
}

// ReserveBody takes n bytes of the body budget for a gRPC message about
// to be received (grpcfront.Budget): false, nothing taken, when they do
// not fit. Over 1 MiB it is held, as a large body is, to seven eighths
// of the budget.
func (f *Front) ReserveBody(n int64) bool {
	return f.budget.reserve(n, n, f.cfg().BodyBudgetLimit())
}

// ReserveAnswer takes n bytes of the body budget for a gRPC answer held
// until it is written (grpcfront.Budget), as a large body whatever its
// size (bodyBudget.reserveAnswer); ReleaseAnswer gives them back.
func (f *Front) ReserveAnswer(n int64) bool {
	return f.budget.reserveAnswer(n, f.cfg().BodyBudgetLimit())
}

// ReleaseAnswer gives back n bytes taken by ReserveAnswer.
func (f *Front) ReleaseAnswer(n int64) { f.budget.releaseAnswer(n) }

// ClaimBody makes a gRPC message of n bytes (over 1 MiB) the body
// budget's heir: grpcfront's line of messages waiting for room gives it
// to its head. Room given back goes to it first, up to what the large
// bodies may hold, until it has n (see bodyHeir). settle takes what fits
// now and reports whether it has all n, which are then its charge, given
// back with ReleaseBody(n); cancel gives back what a claim not settled
// holds. Nil for a small message (the eighth kept for small bodies is
// its room), or when another message holds the claim.
func (f *Front) ClaimBody(n, total int64) (settle func() bool, cancel func()) {
	if n != total || total <= smallBodyBytes {
		return nil, nil
	}
	h := f.budget.claim(n, f.cfg().BodyBudgetLimit())
	if h == nil {
		return nil, nil
	}
	return h.settle, h.cancel
}

// ReleaseBody gives back n bytes taken by ReserveBody, or by a claim
// settled (ClaimBody).
func (f *Front) ReleaseBody(n int64) { f.budget.release(n, largePart(n, n)) }
