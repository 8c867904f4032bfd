package quarantine

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// Poison requests (limits.poison_threshold, limits.poison_ttl): a body
// whose infer worker crashes (not a kill from outside, the hang
// detection's included: supervisor/workers crashlog.go says why) while at work on
// it, poison_threshold times within poison_ttl, is refused 422 for
// poison_ttl without reaching a worker. A client or load balancer
// retrying it would otherwise restart the worker again and again, failing
// every request it holds each time.
//
// Attribution is by evidence, not by presence (blame.go). Every request
// is sent with a token of its own (worker.TokenHeader); the infer worker
// records the tokens of each run in its scoreboard slot before the run
// starts and clears them after (worker/infer atwork.go), and the prep
// worker those of the requests it decodes. After a crash the master reads
// that record (Options.InferExited, PrepExited; the answer names the
// worker's socket). Only the requests at work then can have caused it:
//   - In the only run executing: a strike.
//   - In a run beside another (two models, or two instances, at once):
//     ONNX Runtime's fault kills the process from whichever thread, so
//     which run faulted cannot be told. Not a strike: its body is made a
//     suspect (poison.Quarantine.Suspected), whose next run is alone, as
//     below, where a crash is its own.
//   - Not at work (queued, or another model's request on its own queue):
//     nothing of it ran, so it is sent again, once, crash or kill, to a
//     worker that lives (503 when none is back yet). Before, such requests
//     were struck with the guilty: with mlp and a crashing modx on one
//     worker, four clients' one mlp body was in flight at every crash and
//     quarantined (issue 28; TestPoisonSparesAnotherModelsInnocents).
// Without a scoreboard nothing is known, and a crash strikes every
// request on the worker, as it did before.
//
// A run stopped at models[].max_run_time (worker.RunTimeoutHeader) is a
// strike like a crash, with no check that it was the worker's own doing:
// only the worker stops a run, and only for taking too long. A body that
// makes every worker's run explode is quarantined as a crashing one is.
//
// Innocent requests batched with a poison one fail in the same crash or
// run timeout and are struck once too. Retried into a batch with the
// poison body again (a client, or a retrying load balancer, resending
// both), they would be struck again and quarantined with it. So a
// suspect, a body struck within poison_ttl but below the threshold
// (poison.Standing.Suspect), is sent marked to run alone
// (worker.AloneHeader: the prep worker passes it on, and the infer
// worker's batcher gives it a batch of its own, batch.Request.Alone): the
// innocent batchmates of its first strike, suspects too, never share its
// run again, nor does any other request. Suspects are rare (the bodies of
// a crash or a run timeout, until acquitted or for poison_ttl), so
// running them unbatched costs little: supervisor_poison_solo_runs_total
// counts them, and BenchmarkMLPSuspects in internal/batch measures the
// throughput lost (a quarter, all requests alone).
//
// A suspect whose solo run is served is acquitted (poison.Acquit, counted
// in supervisor_poison_acquitted_total): its strikes are cleared and its
// next send is batched again. Without that, a body many requests share
// (a health check's, a load test's, a popular input) struck once beside
// a poison one would run unbatched until poison_ttl. Served means the
// worker answered 2xx, or refused the body for what it is (acquits: 400,
// 413, 415, 422), answers it gets every time without a run that crashes;
// not 5xx, which a crash, a run timeout, an overload or a failed run
// gives, nor a 4xx about the server's state (404, 408, 409, 429), nor a
// client's hang-up. A poison body never is: its solo run crashes or times
// out, a strike, and it is quarantined at the threshold as before. Sends
// of one suspect race: one served acquits the strikes the others' crashes
// counted before it, and a crash after it counts one.
//
// A body is acquitted once per poison_ttl window (from its first strike):
// struck again, it stays a suspect until the window ends. Else a body
// that crashes only when batched (on some batch shapes, beside some other
// body) would be acquitted by each solo run and crash a batch every other
// send, never quarantined; so it crashes at most two batches a window. A
// body struck by two unrelated crashes in one window runs alone until
// it ends, as every suspect did before acquittals. An acquitted body's
// entry stays until its window ends, so its model's requests are still
// keyed on arrival meanwhile (Watching), as after any strike.
//
// What a strike while a suspect runs alone proves:
//   - A run timeout of its solo run is that run's own: no other request
//     was in it, so the strike falls on the suspect alone. It still
//     counts one strike, not the whole threshold: a run's time on a
//     shared host also depends on the batches the worker runs beside it
//     (batching.instances, other models) and on other processes, and
//     poison_threshold is the operator's tolerance for such flukes.
//   - A crash during a solo run is the suspect's: its run is the only one
//     in the worker while it executes (the other runs wait for it, and it
//     for them), so the record shows it alone, a strike.
//
// A request that was at work is never sent again: a poison body would
// take the next worker down too.
//
// A request a prep worker that crashed on its own (a decoder's fault)
// was decoding is a strike too: the lb answers it 502 when the worker's
// connection breaks (lb.BackendError names the worker). The requests it
// was not decoding (waiting on their infer worker, or at the decode gate)
// are not struck; they are answered 502, not sent again (their infer
// worker may be running them). Requests decoded at the same moment share
// the strike, the innocent with the guilty (a prep worker has no solo
// decodes); the threshold (2 or more) keeps the innocent out, for an
// innocent body is refused only if decoded at threshold crashes within
// poison_ttl. A prep worker's exit for any other reason (a recycle or a
// stop drains it first; the OOM killer's, the hang detection's or an
// operator's kill) is no strike.
//
// A request whose client hung up is abandoned (lb.ErrClientGone), but
// the worker may still crash on it: a prep worker cannot interrupt a
// decode already running, and an infer worker runs a batch as long as
// one of its requests is waited for, or crashes before a cancelled run
// stops. Skipping the strike then let a client that hangs up before the
// crash send a poison body for ever. So an abandoned request (while
// poison_threshold > 0) is remembered (abandoned.go: its key, computed
// then, for the master still has the body; its model; when it was sent;
// its deadline; its token), among the last 256, and every crash of a
// prep or infer worker on its own (WorkerCrashed, from the master's crash
// log) strikes each one sent before the crash whose deadline had not
// passed and that the worker was at work on, once (every one, without a
// scoreboard). Kills from outside strike nothing here either.
//
// The key is what reaches the model, not the bytes as sent
// (key.go): the body decompressed, then decoded into its tensors,
// whose names, datatypes, shapes and bytes are hashed with the model's
// name (v2.WriteRequestKey, the one key the response cache starts from
// too), not the route's form nor the requested outputs. So the same
// tensors sent gzip'd or deflated at any level, as JSON (with any
// whitespace or number spelling) or binary, to /versions/{v} or to the
// unversioned route that resolves to v,
// asking for any output or classification, are one body: a client or
// retrying library that varies any of these is quarantined all the
// same. The alternative, keying on the response
// cache's key, computed by the prep worker after it decodes the request,
// cannot be had for a request whose prep worker crashed (nothing comes
// back), and the master would still have to decode each incoming request
// to check it; so the master decodes, which it does only when it must:
// on a strike, and for each request of a model while that model has an
// entry (poison.Quarantine.Watching), which in a healthy server is never.
// The healthy hot path pays one atomic load. A watched model's requests
// pay a decompression and a V2 decode on the master on top of the prep
// worker's, for poison_ttl after a strike (BenchmarkPoisonKey, one core
// of a shared 2-core VM, an 8192-element INT64 tensor): 40 KB of JSON
// 230 us against 4 us to hash the bytes as sent (about 170 MB/s, so a
// 10 MB JSON body costs some 60 ms of master CPU), gzip'd 490 us against
// 3 us, binary 15 us either way (the tensor bytes alias the body; only
// the JSON header is parsed). A body that is no V2 request (an image
// body) costs its decompression only. The decode's memory, up to four
// times the JSON bytes, is charged to the body budget as the
// decompression is; a body whose decode does not fit is keyed by its
// decompressed bytes (key.go decodeCost).
//
// Every abandoned request is keyed at once, whether or not a crash
// follows, so a client flooding large JSON bodies and hanging up on each
// would make the master, which serves every client, decode them all
// (10 MB: some 60 ms each). So the bytes decoded for abandoned requests
// are bounded by a token bucket (keyrate.go): limits.poison_key_rate,
// by default 64 MiB/s, about a quarter of a core at the decode's
// 170 MB/s (0: never decode, always the fallback below), as deep as
// max_body_bytes so that one request of any admitted size fits; a body
// that inflates is charged what it inflated to, into debt, so the rate
// holds however far it inflates (BenchmarkAbandonFlood measures it).
// Past the rate, an abandoned request is remembered by the key of its
// bytes as sent (4 us for 40 KB; counted, BodyCounts.PoisonFallbackKeys,
// so an operator sees when the rate is spent), which screen checks too, so a
// flooding client that resends the same bytes is still struck and then
// refused. Not remembering it at all would reopen the dodge for exactly
// the client that floods; what the fallback loses is only a flooding
// client that varies the encoding of each send, whose strikes then fall
// on different keys (or split between the decoded key and the sent one,
// so its quarantine takes up to twice the tries). The healthy server
// abandons far below the rate and keys as before.

// Options are what a Guard needs of the master.
type Options struct {
	// Config is the config in force (limits.poison_*, max_body_bytes,
	// the body budget's limit, prep.upstream_timeout).
	Config func() *config.Config
	// Budget is charged the decompression and decode done to key a
	// body (key.go).
	Budget func() *admission.Bodies
	Log    zerolog.Logger
	// InferExited finds the unexpected exit of the infer worker on
	// socket (the prep worker names it in worker.InferExitedHeader),
	// waiting up to wait for the master to reap it: whether it crashed
	// and what it was at work on (blame.go). Nil: every such exit is a
	// crash with nothing known of its work, a strike for each request on
	// it.
	InferExited func(socket string, wait time.Duration) (Exit, bool)
	// PrepExited is InferExited for prep workers, whose socket the lb's
	// error names (lb.BackendError). Nil: a broken prep connection is
	// never a crash (the guard cannot tell a crash from a recycle's or a
	// stop's broken connection without it).
	PrepExited func(socket string, wait time.Duration) (Exit, bool)
	// ModelIdentity is the content identity of the file model is served
	// from (internal/modelid), the start of its keys (key.go), so that a
	// quarantine ends with the weights it was struck on. Nil, or "": none,
	// as for a model not configured.
	ModelIdentity func(model string) string
	// ServedName is the served name (internal/v2 versions.go) a route of
	// a model asks for, the model part of its keys (key.go): each version
	// is quarantined on its own. Nil: the route's model.
	ServedName func(v2.Route) string
	// Spliced is the body a request stands for when the body sent
	// leaves bytes out (an infer request whose inputs are in system
	// shared memory regions: supervisor/sysshm), so that its key sees
	// the tensor bytes (key.go); ok false: the body as sent. Nil: none.
	Spliced func(*fasthttp.RequestCtx) (body []byte, ok bool)
}

// Guard is the poison quarantine around the forward path (Around), told
// of worker crashes by the master's crash log (WorkerCrashed). Safe for
// concurrent use.
type Guard struct {
	o Options
	// q holds the bodies that made workers exit (internal/poison).
	q *poison.Quarantine
	// abandoned are the last requests whose client hung up
	// (abandoned.go).
	abandoned abandonedRing
	// abandonKeys bounds the decoding done to key abandoned requests
	// (keyrate.go); fallbackKeys counts those keyed by their bytes as
	// sent past it.
	abandonKeys  keyRate
	fallbackKeys atomic.Int64
	// tokens numbers the requests sent: each is sent with its token
	// (worker.TokenHeader), which the workers record while at work on
	// it (blame.go).
	tokens atomic.Uint64
}

// New returns an empty quarantine.
func New(o Options) *Guard { return &Guard{o: o, q: poison.New(poison.DefaultMax)} }

// Around sends the inference request in ctx for model (as its route
// named it) with send, under the quarantine, and returns send's last
// error. A quarantined body is not sent: Around returns its refusal
// (422). Otherwise the request is sent under a token of its own
// (worker.TokenHeader), marked to run alone when it is a suspect
// (worker.AloneHeader), and after each send the guard weighs the
// answer: a run stopped at max_run_time, or a worker's death under the
// request, is a strike or makes a suspect; a request whose infer worker
// died before it was at work is sent again, once, while its deadline
// allows; a served suspect is acquitted; a request whose client hung up
// (lb.ErrClientGone) is remembered for a crash that may follow
// (WorkerCrashed). An answer the lb refused (lb.ErrAnswerRefused) is
// neither a crash nor a strike. The workers' marks are removed from the
// answer.
func (g *Guard) Around(ctx *fasthttp.RequestCtx, c *config.Config, model string, deadline time.Time, send func() error) (*admission.Refusal, error) {
	on := c.Limits.PoisonThreshold > 0
	var suspect []poison.Key
	if on {
		var r *admission.Refusal
		if r, suspect = g.screen(ctx, model); r != nil {
			return r, nil
		}
		if suspect != nil {
			ctx.Request.Header.Set(worker.AloneHeader, "1")
			g.q.SoloRun(model)
		}
	}
	token := g.tokenOf(ctx)
	for resent := false; ; resent = true {
		sent := time.Now()
		err := send()
		if errors.Is(err, lb.ErrAnswerRefused) {
			return nil, err
		}
		if errors.Is(err, lb.ErrClientGone) { // nobody waits: the worker may still crash on it
			if on {
				g.abandon(ctx, c, model, token, sent, deadline)
			}
			return nil, err
		}
		if ctx.Response.Header.Peek(worker.RunTimeoutHeader) != nil {
			g.countRunTimeout(ctx, c, model)
			return nil, err
		}
		exited := ctx.Response.Header.Peek(worker.InferExitedHeader)
		inferExited, socket := exited != nil, string(exited)
		ctx.Response.Header.Del(worker.InferExitedHeader)
		if !inferExited && err == nil {
			if suspect != nil && acquits(ctx.Response.StatusCode()) {
				g.q.Acquit(model, suspect...)
			}
			return nil, nil
		}
		switch g.blameFor(inferExited, socket, err, token) {
		case blameRetry:
			if !resent && (deadline.IsZero() || time.Now().Before(deadline)) {
				ctx.Response.Reset()
				continue
			}
		case blameStrike:
			if on {
				g.countCrash(ctx, c, model)
			}
		case blameSuspect:
			if on {
				g.q.Suspected(model, g.Key(ctx), c.Limits.PoisonTTL.Duration)
			}
		}
		return nil, err
	}
}

// Stats are the quarantine's counts by model, for /metrics and status.
func (g *Guard) Stats() poison.Stats { return g.q.Stats() }

// FallbackKeys is the number of abandoned requests keyed by their bytes
// as sent, past limits.poison_key_rate (keyrate.go).
func (g *Guard) FallbackKeys() int64 { return g.fallbackKeys.Load() }

// acquits says whether a worker's answer of status to a suspect's solo
// run clears its strikes (see Guard): 2xx, or a refusal of the body for
// what it is (400 malformed or invalid for the model, 413 too large, 415
// an encoding it cannot read, 422): answers the body gets every time,
// without a run that could crash. Not 5xx (a failed run, an exited
// worker, an overload or a timeout) nor the other 4xx (404 no such model,
// 408, 409, 429: about the server's state, not the body).
func acquits(status int) bool {
	switch status {
	case fasthttp.StatusBadRequest, fasthttp.StatusRequestEntityTooLarge,
		fasthttp.StatusUnsupportedMediaType, fasthttp.StatusUnprocessableEntity:
		return true
	}
	return status >= 200 && status < 300
}

// crashWait bounds how long an answer waits for the master to reap the
// worker that exited under it: the request sees the connection
// break first, the master's Wait returns a moment later.
const crashWait = time.Second

// screen is the refusal of a quarantined body, or nil, and the keys the
// body is a suspect by (nil: none), to run alone and acquit if served.
// The body is hashed only while model has entries: first as sent (struck
// so when abandoned past limits.poison_key_rate), then decoded.
func (g *Guard) screen(ctx *fasthttp.RequestCtx, model string) (r *admission.Refusal, suspect []poison.Key) {
	if !g.q.Watching(model) {
		return nil, nil
	}
	for _, key := range [...]func(*fasthttp.RequestCtx) poison.Key{g.sentKey, g.Key} {
		k := key(ctx)
		s := g.q.Look(k)
		if s.Blocked {
			return &admission.Refusal{Status: fasthttp.StatusUnprocessableEntity, Msg: fmt.Sprintf(
				"this request made a worker serving model %q crash, or its run outlive max_run_time, repeatedly; "+
					"requests with the same tensors are refused for %s more (limits.poison_ttl)", model, s.Left.Round(time.Second))}, nil
		}
		if s.Suspect {
			suspect = append(suspect, k)
		}
	}
	return nil, suspect
}

// countCrash counts the request's body towards its quarantine.
func (g *Guard) countCrash(ctx *fasthttp.RequestCtx, c *config.Config, model string) {
	g.strike(model, g.Key(ctx), c)
}

// abandon remembers a request sent at sent with token whose client hung
// up, for a worker crash while it may still be at work on it
// (WorkerCrashed), or strikes it at once when one already was.
func (g *Guard) abandon(ctx *fasthttp.RequestCtx, c *config.Config, model string, token uint64, sent, deadline time.Time) {
	r := abandonedReq{model: model, key: g.abandonKey(ctx, time.Now()), token: token, sent: sent, until: inFlightUntil(c, sent, deadline)}
	if g.abandoned.add(r) {
		g.strike(model, r.key, c)
	}
}

// inFlightUntil is how long a request sent at sent may be on a worker:
// until its deadline (zero: none), or the prep worker's
// prep.upstream_timeout, whichever is first, plus crashWait, for the
// master reaps a crashed worker a moment after it dies.
func inFlightUntil(c *config.Config, sent, deadline time.Time) time.Time {
	until := sent.Add(c.Prep.UpstreamTimeout.Duration)
	if !deadline.IsZero() && deadline.Before(until) {
		until = deadline
	}
	return until.Add(crashWait)
}

// WorkerCrashed strikes the abandoned requests that a prep or an infer
// worker that crashed on its own (not killed from outside: the master's
// crash log tells) was at work on (e.Work; every one in flight then when
// nothing is known of its work).
func (g *Guard) WorkerCrashed(e Exit) {
	c := g.o.Config()
	for _, r := range g.abandoned.take(e) {
		if c.Limits.PoisonThreshold > 0 {
			g.strike(r.model, r.key, c)
		}
	}
}

// strike counts one crash against k, sent to model, and logs its
// quarantine.
func (g *Guard) strike(model string, k poison.Key, c *config.Config) {
	if !g.q.Crashed(model, k, c.Limits.PoisonThreshold, c.Limits.PoisonTTL.Duration) {
		return
	}
	g.o.Log.Warn().Str("model", model).Str("hash", fmt.Sprintf("%016x", k.Hash)).Int("body_bytes", k.Len).
		Int("crashes", c.Limits.PoisonThreshold).Dur("ttl", c.Limits.PoisonTTL.Duration).
		Msg("request quarantined: a prep or infer worker crashed under it, or its run outlived max_run_time, limits.poison_threshold times; requests with the same tensors are refused 422 for limits.poison_ttl")
}

// countRunTimeout counts a run stopped at max_run_time by model and as a
// strike against the request's body, and removes the header.
func (g *Guard) countRunTimeout(ctx *fasthttp.RequestCtx, c *config.Config, model string) {
	ctx.Response.Header.Del(worker.RunTimeoutHeader)
	g.q.RunTimedOut(model)
	if c.Limits.PoisonThreshold > 0 {
		g.countCrash(ctx, c, model)
	}
}
