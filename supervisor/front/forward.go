package front

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/quarantine"
)

// forward sends an admitted inference request for model (as its
// header's route named it), whose body is whole in ctx, through the lb
// to a prep worker, under the poison quarantine (quarantine.Guard.Around:
// a quarantined body is refused 422 before it is sent; a worker's death
// under it is weighed, and may send it once more). client tells the lb
// when nobody waits for the answer any more (clientgone.go; nil: never):
// the request is then abandoned, answered nothing and counted. gate is
// asked about the answer (answerbudget.go).
func (f *Front) forward(ctx *fasthttp.RequestCtx, c *config.Config, model string, deadline time.Time, client lb.Client, gate lb.AnswerGate) {
	var traced *requestTrace
	if f.opts.Tracing != nil { // trace.go; off: this nil check is all
		traced = f.opts.Tracing.beginTrace(ctx, model)
	}
	refused, err := f.guard.Around(ctx, c, model, deadline, func() error {
		return f.proxy.ServeHTTPFor(ctx, deadline, client, gate)
	})
	if traced != nil {
		traced.end(ctx, err)
	}
	switch {
	case refused != nil:
		f.refuse(ctx, *refused, false)
	case errors.Is(err, lb.ErrClientGone):
		f.bodies.clientClosed.Add(1)
	}
}

// WorkerCrashed strikes the abandoned requests that a prep or an infer
// worker that crashed on its own was at work on (quarantine.Guard).
func (f *Front) WorkerCrashed(e quarantine.Exit) { f.guard.WorkerCrashed(e) }

// PoisonStats are the poison quarantine's counts by model, for /metrics
// and status.
func (f *Front) PoisonStats() poison.Stats { return f.guard.Stats() }
