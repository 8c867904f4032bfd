package quarantine

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// sender is the lb's part a rig needs: it stands in for the prep worker.
type sender interface {
	ServeHTTPFor(ctx *fasthttp.RequestCtx, deadline time.Time, client lb.Client, gate lb.AnswerGate) error
}

// rig is a Guard over a stand-in for the lb (proxy), under a config a
// test may replace (cfg), with a body budget of its own.
type rig struct {
	*Guard
	proxy  sender
	cfg    atomic.Pointer[config.Config]
	budget *admission.Bodies
}

func newRig(cfg *config.Config, p sender, inferExited func(string, time.Duration) (Exit, bool)) *rig {
	r := &rig{proxy: p, budget: admission.NewBodies(cfg.BodyBudgetLimit())}
	r.cfg.Store(cfg)
	r.Guard = New(Options{Config: r.cfg.Load, Budget: func() *admission.Bodies { r.budget.SetLimit(r.cfg.Load().BodyBudgetLimit()); return r.budget }, Log: zerolog.Nop(), InferExited: inferExited})
	return r
}

// forward sends the request in ctx through the guard to the proxy, and
// answers a refusal as the front does.
func (r *rig) forward(ctx *fasthttp.RequestCtx, c *config.Config, model string, deadline time.Time, client lb.Client, gate lb.AnswerGate) {
	refused, _ := r.Around(ctx, c, model, deadline, func() error { return r.proxy.ServeHTTPFor(ctx, deadline, client, gate) })
	if refused != nil {
		ctx.SetStatusCode(refused.Status)
		ctx.SetBody(v2.AppendError(nil, refused.Msg))
	}
}
