package front

import (
	"context"
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
	case v.Status != 0:
		f.refuse(ctx, v.Refusal, false)
	case v.proxied:
		f.forwardInfer(ctx, c, v, lb.ContextClient{Ctx: rpc}, f.answerGate(v))
		f.handAnswer(ctx, v)
	default:
		f.serveLocal(ctx)
	}
	f.logRequest(ctx, time.Since(start))
}
