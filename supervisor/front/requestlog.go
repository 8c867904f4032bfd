package front

import (
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
)

// logRequest writes the request log for one request through the lb: at
// warn when it took longer than request_log.slow_threshold, and at info
// for one request in request_log.sample_every. Health checks and metadata
// routes are not logged.
func (f *Front) logRequest(ctx *fasthttp.RequestCtx, took time.Duration) {
	path := string(ctx.Path())
	if !strings.HasPrefix(path, "/v2/models/") {
		return
	}
	rl := f.cfg().RequestLog
	slow := rl.SlowThreshold.Duration > 0 && took > rl.SlowThreshold.Duration
	sampled := rl.SampleEvery > 0 && f.sampled.Add(1)%uint64(rl.SampleEvery) == 0
	if !slow && !sampled {
		return
	}
	ev := f.log.Info()
	msg := "request"
	if slow {
		ev, msg = f.log.Warn(), "slow request"
	}
	model, _, _ := strings.Cut(strings.TrimPrefix(path, "/v2/models/"), "/")
	ev.Str("method", string(ctx.Method())).Str("path", path).Str("model", model).
		Int("status", ctx.Response.StatusCode()).Float64("duration_ms", float64(took.Microseconds())/1000).
		Str("request_id", string(ctx.Response.Header.Peek(lb.HeaderRequestID))).
		Str("client", ctx.RemoteAddr().String()).Msg(msg)
}
