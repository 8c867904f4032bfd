package prep

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/hangup"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

// Work for a client that has gone stops at the next image boundary: when
// the client's deadline (X-Request-Timeout, which the master passes on as
// worker.DeadlineHeader) has passed, or when the master has closed the
// connection the request came on, which it does when it stops waiting
// (its deadline or upstream timeout) or dies. fasthttp's RequestCtx.Done
// fires only at server shutdown, so the connection is asked directly
// (hangup.PeerClosed). While the request waits on its infer worker, the
// connection is the lb's Client (masterGone), watched for the master's
// hang-up as an epoll event (hangup.Peer): the hang-up closes the
// connection to the infer worker at once, which stops the run in turn,
// so a client's hang-up reaches the model however long the request's
// own deadline, and frees the request's arena slot without waiting for
// a poll.

// Reasons a request's work stops.
var (
	errDeadlinePassed = errors.New("the client's deadline passed")
	errClientGone     = errors.New("the master closed the connection: nobody waits for the answer")
)

// stopper says whether a request's work should stop. The zero value never
// stops.
type stopper struct {
	deadline time.Time        // zero: none
	conn     net.Conn         // nil: not checked
	now      func() time.Time // nil: time.Now
	// work records each decode of the request as at work (atwork.go);
	// nil: nothing is recorded.
	work func() shm.Work
}

// stopperFor watches ctx's deadline and connection, and records its
// decodes in slot (nil: none).
func stopperFor(ctx *fasthttp.RequestCtx, slot *shm.Slot) stopper {
	s := stopper{conn: ctx.Conn()}
	if slot != nil {
		s.work = func() shm.Work { return atWork(slot, ctx) }
	}
	if ns, err := strconv.ParseInt(string(ctx.Request.Header.Peek(worker.DeadlineHeader)), 10, 64); err == nil {
		s.deadline = time.Unix(0, ns)
	}
	return s
}

// Check returns errDeadlinePassed or errClientGone, or nil to go on. It
// costs a clock read and one non-blocking syscall.
//
// It peeks rather than reading a hang-up event: a socket can be
// registered with the process's epoll instance (hangup.Default) only
// once, and the lb registers it while the request waits on its infer
// worker (masterGone), so an event kept from the decode phase would have
// to be handed over to the lb's watch, in every stopperFor's caller. A
// peek per image (about 2.5 us) is small beside the image's decode.
func (s stopper) Check() error {
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	if !s.deadline.IsZero() && !now().Before(s.deadline) {
		return errDeadlinePassed
	}
	if s.conn != nil && hangup.PeerClosed(s.conn) {
		return errClientGone
	}
	return nil
}

// masterGone is the lb's Client (lb.Proxy.DoRouteFor) for the request
// ctx: the master, on the connection the request came on.
func masterGone(ctx *fasthttp.RequestCtx) lb.Client {
	return hangup.Peer{Conn: ctx.Conn()}
}

// failureLevel is the level an infer worker request's failure is logged
// at: debug when the master hung up (a client's doing, counted by the
// master); error when no infer worker took the request or none answered
// in time; warn when the infer worker exited with it (sendFailure's 502),
// which is handled: the master logs the worker's exit at error level and
// sends the request again or answers it.
func failureLevel(err error) zerolog.Level {
	switch {
	case errors.Is(err, lb.ErrClientGone):
		return zerolog.DebugLevel
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, lb.ErrNoBackend):
		return zerolog.ErrorLevel
	}
	return zerolog.WarnLevel
}

// AtWork records the request as at work until the Work's End (atwork.go).
func (s stopper) AtWork() shm.Work {
	if s.work == nil {
		return shm.Work{}
	}
	return s.work()
}
