package front

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// Poison requests (limits.poison_threshold, limits.poison_ttl): a body
// whose infer worker crashes (Options.InferCrashed: not a kill from
// outside) while serving it, poison_threshold times within
// poison_ttl, is refused 422 for poison_ttl without reaching a worker. A
// client or load balancer retrying it would otherwise restart the worker
// again and again, failing every request it holds each time.
//
// A run stopped at models[].max_run_time (worker.RunTimeoutHeader) is a
// strike like a crash, with no check that it was the worker's own doing:
// only the worker stops a run, and only for taking too long. A body that
// makes every worker's run explode is quarantined as a crashing one is.
//
// Innocent requests batched with a poison one fail in the same crash and
// are counted once; only a body in threshold crashes is quarantined, so
// they pass when retried. The front does not retry a crashed request on
// another worker: a poison body would take that one down too.
//
// The key is the route path and the body as the client sent it (still
// compressed if it was): a retry sends the same bytes.

// proxyInference sends an admitted inference request for model (as its
// header's route named it), whose body is whole in ctx, through the lb,
// unless its body is quarantined; then it counts a crash of the infer
// worker that served it.
func (f *Front) proxyInference(ctx *fasthttp.RequestCtx, c *config.Config, model string, deadline time.Time) {
	on := c.Limits.PoisonThreshold > 0
	if on {
		if r := f.quarantined(ctx, model); r != nil {
			f.refuse(ctx, *r, false)
			return
		}
	}
	sent := time.Now()
	f.proxy.ServeHTTPUntil(ctx, deadline)
	if ctx.Response.Header.Peek(worker.RunTimeoutHeader) != nil {
		f.countRunTimeout(ctx, c, model)
		return
	}
	if ctx.Response.Header.Peek(worker.InferExitedHeader) == nil {
		return
	}
	ctx.Response.Header.Del(worker.InferExitedHeader)
	if on && f.crashedOnItsOwn(sent) {
		f.countCrash(ctx, c, model)
	}
}

// crashWait bounds how long an answer waits for the master to reap the
// infer worker that exited under it: the request sees the connection
// break first, the master's Wait returns a moment later.
const crashWait = time.Second

// crashedOnItsOwn says whether the exit was an infer worker's crash since
// sent rather than a kill from outside (the OOM killer, the hang
// detection, an operator's SIGKILL): the requests in flight then did not
// cause it, and identical requests (a load test's, a health check's) must
// not be quarantined for it.
func (f *Front) crashedOnItsOwn(sent time.Time) bool {
	if f.opts.InferCrashed == nil {
		return true
	}
	return f.opts.InferCrashed(sent, crashWait)
}

// quarantined is the refusal of a quarantined body, or nil. The body is
// hashed only while model has entries.
func (f *Front) quarantined(ctx *fasthttp.RequestCtx, model string) *refusal {
	if !f.poison.Watching(model) {
		return nil
	}
	left, ok := f.poison.Blocked(f.poison.KeyOf(ctx.Path(), ctx.Request.Body()))
	if !ok {
		return nil
	}
	return &refusal{status: fasthttp.StatusUnprocessableEntity, msg: fmt.Sprintf(
		"this request made the inference worker serving model %q exit, or its run outlive max_run_time, repeatedly; "+
			"identical requests are refused for %s more (limits.poison_ttl)", model, left.Round(time.Second))}
}

// countCrash counts the request's body towards its quarantine.
func (f *Front) countCrash(ctx *fasthttp.RequestCtx, c *config.Config, model string) {
	k := f.poison.KeyOf(ctx.Path(), ctx.Request.Body())
	if !f.poison.Crashed(model, k, c.Limits.PoisonThreshold, c.Limits.PoisonTTL.Duration) {
		return
	}
	f.log.Warn().Str("model", model).Str("hash", fmt.Sprintf("%016x", k.Hash)).Int("body_bytes", k.Len).
		Int("crashes", c.Limits.PoisonThreshold).Dur("ttl", c.Limits.PoisonTTL.Duration).
		Msg("request quarantined: its inference worker exited on it, or its run outlived max_run_time, limits.poison_threshold times; identical requests are refused 422 for limits.poison_ttl")
}

// countRunTimeout counts a run stopped at max_run_time by model and as a
// strike against the request's body, and removes the header.
func (f *Front) countRunTimeout(ctx *fasthttp.RequestCtx, c *config.Config, model string) {
	ctx.Response.Header.Del(worker.RunTimeoutHeader)
	f.poison.RunTimedOut(model)
	if c.Limits.PoisonThreshold > 0 {
		f.countCrash(ctx, c, model)
	}
}

// PoisonStats are the poison quarantine's counts by model, for /metrics
// and status.
func (f *Front) PoisonStats() poison.Stats { return f.poison.Stats() }
