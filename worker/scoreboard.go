package worker

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/shm"
)

// openSlot maps the worker's scoreboard slot. A board that cannot be
// opened is logged and skipped: reporting must never stop a worker from
// serving.
func (r *Runtime) openSlot() {
	if r.Spec.Scoreboard == "" {
		return
	}
	b, err := shm.Open(r.Spec.Scoreboard)
	if err == nil && (r.Spec.ScoreboardSlot < 0 || r.Spec.ScoreboardSlot >= b.Len()) {
		b.Close()
		r.Log.Warn().Int("slot", r.Spec.ScoreboardSlot).Str("scoreboard", r.Spec.Scoreboard).Msg("scoreboard slot out of range; serving unreported")
		return
	}
	if err != nil {
		r.Log.Warn().Err(err).Msg("could not open the scoreboard; serving unreported")
		return
	}
	// The board stays mapped until the process exits: counters may be
	// written until the very end of a drain.
	r.slot = b.Slot(r.Spec.ScoreboardSlot)
	r.slot.SetPID(r.pid)
}

// Slot returns the worker's scoreboard slot, or nil when it has none.
// shm.Slot.Model is nil-safe, so per-model counters need no check.
func (r *Runtime) Slot() *shm.Slot { return r.slot }

// setState records a lifecycle state in the slot, if any.
func (r *Runtime) setState(st shm.State) {
	if r.slot != nil {
		r.slot.SetState(st)
	}
}

// beat records a heartbeat in the slot, if any.
func (r *Runtime) beat(now time.Time) {
	if r.slot != nil {
		r.slot.Heartbeat(now)
	}
}

// track accounts the worker's inference requests (POST; the other methods
// are metadata, statistics and control) in its slot: in flight, count,
// failures (any status from 400) and latency.
func (r *Runtime) track(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	s := r.slot
	if s == nil {
		return h
	}
	return func(ctx *fasthttp.RequestCtx) {
		if !ctx.IsPost() {
			h(ctx)
			return
		}
		start := time.Now()
		s.RequestStarted()
		defer func() {
			s.RequestFinished(time.Since(start), ctx.Response.StatusCode() >= fasthttp.StatusBadRequest)
		}()
		h(ctx)
	}
}

// FailureOf classifies a finished inference request by its HTTP status,
// as Triton's nv_inference_request_failure reasons: 503 is Rejected
// (overloaded), 500 and 502 Backend (the run or the infer worker failed),
// other errors Other (invalid input, too large, timed out).
func FailureOf(status int) shm.Failure {
	switch {
	case status < fasthttp.StatusBadRequest:
		return shm.Success
	case status == fasthttp.StatusServiceUnavailable:
		return shm.Rejected
	case status == fasthttp.StatusInternalServerError, status == fasthttp.StatusBadGateway:
		return shm.Backend
	}
	return shm.Other
}
