package quarantine

import (
	"errors"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

// Exit is a worker's unexpected exit as the master saw it (supervisor/workers
// crashlog.go), for the poison quarantine.
type Exit struct {
	At     time.Time
	Socket string // the worker's socket: what lb.BackendError names
	// Crashed: on its own (a fault signal, an exit status), not killed
	// from outside (the OOM killer, the hang detection, an operator).
	Crashed bool
	// Work is what the worker was at work on when it died (the work
	// record of its scoreboard slot, shm.AtWork), if Read: without a
	// scoreboard nothing is known.
	Work shm.AtWork
	Read bool
}

// blame is what a worker's exit under a request means for it.
type blame int

const (
	// blameNone: not the request's doing; answered as the worker's
	// death left it (502), nothing counted.
	blameNone blame = iota
	// blameRetry: its infer worker died before the request was at work
	// (queued, or waiting for its turn): nothing of it ran, so it is sent
	// again, once, to a worker that lives.
	blameRetry
	// blameSuspect: it was at work beside other work that may have caused
	// the crash (two runs at once): no strike, but its body is a suspect
	// (poison.Quarantine.Suspected), so its next run is alone, where a
	// crash is its own.
	blameSuspect
	// blameStrike: the crash is its doing as far as anyone can tell: a
	// strike against its body.
	blameStrike
)

// tokenOf gives ctx's request its token (worker.TokenHeader): the name
// the workers record it by while at work on it.
func (g *Guard) tokenOf(ctx *fasthttp.RequestCtx) uint64 {
	t := g.tokens.Add(1) & shm.MaxToken
	if t == 0 {
		t = g.tokens.Add(1) & shm.MaxToken
	}
	// Set would copy and normalize the name, FormatUint allocate the value.
	var v [20]byte
	ctx.Request.Header.SetCanonical(tokenHeader, strconv.AppendUint(v[:0], t, 10))
	return t
}

// tokenHeader is worker.TokenHeader, canonical already.
var tokenHeader = []byte(worker.TokenHeader)

// blameFor is what the death of the worker under a request sent with
// token means for it: its infer worker's (inferExited: the prep worker
// marked the answer, naming the worker's socket), or its prep worker's
// (err: the lb's exchange with it failed after the request may have
// reached it).
func (g *Guard) blameFor(inferExited bool, socket string, err error, token uint64) blame {
	if inferExited {
		if g.o.InferExited == nil {
			return blameStrike
		}
		e, ok := g.o.InferExited(socket, crashWait)
		if !ok {
			return blameNone
		}
		return e.inferBlame(token)
	}
	var be *lb.BackendError
	if err == nil || errors.Is(err, lb.ErrNoBackend) || timedOut(err) || g.o.PrepExited == nil || !errors.As(err, &be) {
		return blameNone // answered, never sent, or timed out: no broken connection to wait on
	}
	e, ok := g.o.PrepExited(be.Socket, crashWait)
	if !ok || !e.Crashed || !e.atWork(token) {
		return blameNone
	}
	return blameStrike
}

// inferBlame is what an infer worker's exit means for the request token,
// which was on it. A request its runs were not at work on is innocent,
// and nothing of it ran, killed or crashed: sent again. Of a crash, a
// request in the only run executing is struck, one in a run beside
// others is a suspect: which run faulted cannot be told.
func (e Exit) inferBlame(token uint64) blame {
	if !e.Read { // no record: every request in flight, as if at work alone
		if e.Crashed {
			return blameStrike
		}
		return blameNone
	}
	_, found := e.Work.Unit(token)
	switch {
	case !found && e.Work.Missed == 0:
		return blameRetry
	case !e.Crashed:
		return blameNone
	case found && len(e.Work.Units) == 1 && e.Work.Missed == 0:
		return blameStrike
	}
	return blameSuspect // at work beside others, or maybe among the unrecorded
}

// atWork says whether the worker may have been at work on token when it
// died: recorded so, or nothing known.
func (e Exit) atWork(token uint64) bool {
	if !e.Read || e.Work.Missed > 0 {
		return true
	}
	_, found := e.Work.Unit(token)
	return found
}

// timedOut reports an lb error that is a deadline passing.
func timedOut(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
