package worker

import (
	"time"

	"github.com/rs/zerolog"
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
	r.board = b
	r.followLogLevel(b)
	go r.pollLogLevel(b)
}

// LogLevelPoll is how often a worker reads the scoreboard's log level: a
// POST /v2/logging reaches every worker within it.
const LogLevelPoll = 200 * time.Millisecond

// pollLogLevel follows the board's log level for the worker's lifetime
// (one atomic load a poll).
func (r *Runtime) pollLogLevel(b *shm.Scoreboard) {
	t := time.NewTicker(LogLevelPoll)
	defer t.Stop()
	for range t.C {
		r.followLogLevel(b)
	}
}

// followLogLevel sets the worker's level to the one the master recorded
// in the board's header (shm.Scoreboard.SetLogLevel), if any; the spec's
// level stands until then.
func (r *Runtime) followLogLevel(b *shm.Scoreboard) {
	var lvl int8
	var ok bool
	if err := shm.Guard(func() { lvl, ok = b.LogLevel() }); err != nil || !ok {
		return
	}
	if l := zerolog.Level(lvl); l != zerolog.GlobalLevel() {
		zerolog.SetGlobalLevel(l)
		// Without a level, so the line is written whatever the new one.
		r.Log.Log().Str("log_level", l.String()).Msg("log level set by the master")
	}
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
