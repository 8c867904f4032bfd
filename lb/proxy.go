package lb

import (
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/handoff"
)

// Options configure a Proxy. The zero value is usable.
type Options struct {
	// Timeout bounds each proxied request, across every backend tried, from
	// the start of ServeHTTP until the upstream response is fully read.
	// Zero means 60s.
	Timeout time.Duration
	// MaxConnsPerBackend caps the connections, and so the concurrent
	// requests, to one backend. A request that finds no free connection on
	// any backend is answered 503. Zero means 512.
	MaxConnsPerBackend int
	// Logger receives upstream failures and recovered panics. The zero value
	// discards them.
	Logger zerolog.Logger
}

const (
	defaultTimeout  = 60 * time.Second
	defaultMaxConns = 512
)

// Proxy forwards requests to the least loaded backend. Its methods are safe
// for concurrent use; the zero value is not usable, call New.
type Proxy struct {
	opts Options
	log  zerolog.Logger

	pool atomic.Pointer[pool]
	// timeout is opts.Timeout, changeable while serving (reloads).
	timeout atomic.Int64
	// turn rotates the scan start of every pick so equal backends share load.
	turn atomic.Uint64
	ids  *requestIDs

	mu sync.Mutex // serialises SetBackends, guards known
	// known holds the pool's backends plus removed ones that may still have
	// requests in flight, so Idle and Stats can find them.
	known map[string]*backend
	// exchanges holds the watch and answer gate of each request
	// DoRouteFor is sending with either, by request, for the backends'
	// transport.
	exchanges handoff.Map[fasthttp.Request, *upstream]

	// panicHook, if set, runs at the start of every ServeHTTP; tests use it
	// to make the handler panic.
	panicHook func(*fasthttp.RequestCtx)
}

// New returns a Proxy with no backends: it answers 503 until SetBackends.
func New(opts Options) *Proxy {
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.MaxConnsPerBackend <= 0 {
		opts.MaxConnsPerBackend = defaultMaxConns
	}
	p := &Proxy{
		opts:  opts,
		log:   opts.Logger,
		ids:   newRequestIDs(),
		known: make(map[string]*backend),
	}
	p.pool.Store(&pool{})
	p.timeout.Store(int64(opts.Timeout))
	return p
}

// SetTimeout changes the bound on each proxied request (see
// Options.Timeout) for requests that start from now on. Existing backends
// keep their connections' I/O timeouts until they are replaced, so a
// longer timeout applies fully to workers added after the change.
func (p *Proxy) SetTimeout(d time.Duration) {
	if d <= 0 {
		d = defaultTimeout
	}
	p.mu.Lock()
	p.opts.Timeout = d
	p.mu.Unlock()
	p.timeout.Store(int64(d))
}

// ServeHTTP forwards ctx.Request to a backend and writes its answer, or a V2
// error, into ctx.Response. It is a fasthttp.RequestHandler.
//
// Nothing of ctx is used after it returns: fasthttp's HostClient does the
// upstream exchange synchronously on the caller's goroutine.
func (p *Proxy) ServeHTTP(ctx *fasthttp.RequestCtx) { _ = p.ServeHTTPFor(ctx, time.Time{}, nil, nil) }

// ServeHTTPFor is ServeHTTP for a request the client will wait for only
// until deadline (zero = no deadline of its own; the Proxy's timeout
// still bounds it) and may go away from while a backend works on it. It
// returns why no backend answered (DoRouteFor's error, which ctx's 502,
// 503 or 504 answers), nil when one did: a caller tells a request that
// never reached a worker (ErrNoBackend) from one whose worker may have
// died on it. client, if not nil, is watched (or polled every
// ClientPoll; gone.go), never once ServeHTTPFor has returned, and once
// it has gone the upstream connection is closed, so the worker stops,
// and ServeHTTPFor returns ErrClientGone having answered nothing: ctx's
// status is StatusClientClosedRequest (for the caller's log) and the
// server writes no response and closes the client's connection. gate,
// if not nil, is asked about the worker's answer before its body is read
// (answergate.go); one it refuses is answered 503 with the gate's error.
func (p *Proxy) ServeHTTPFor(ctx *fasthttp.RequestCtx, deadline time.Time, client Client, gate AnswerGate) (err error) {
	var buf [idBufSize]byte
	id := p.requestID(ctx, buf[:0])
	defer p.recoverPanic(ctx, id)
	if p.panicHook != nil {
		p.panicHook(ctx)
	}
	limit := time.Now().Add(time.Duration(p.timeout.Load()))
	if deadline.IsZero() || deadline.After(limit) {
		deadline = limit
	}
	err = p.forward(ctx, id, deadline, client, gate)
	ctx.Response.Header.SetCanonical([]byte(HeaderRequestID), id)
	return err
}

// SetRequestID sets X-Request-Id on a response the caller answered itself
// (health checks, errors raised before the proxy runs): the client's id, or
// a new one, so every response carries one, proxied or not.
func (p *Proxy) SetRequestID(ctx *fasthttp.RequestCtx) {
	var buf [idBufSize]byte
	ctx.Response.Header.SetCanonical([]byte(HeaderRequestID), p.requestID(ctx, buf[:0]))
}

// requestID returns the client's X-Request-Id, copied to dst, or a new one
// that it also sets on the upstream request.
func (p *Proxy) requestID(ctx *fasthttp.RequestCtx, dst []byte) []byte {
	if v := ctx.Request.Header.PeekBytes([]byte(HeaderRequestID)); len(v) > 0 {
		return append(dst, v...)
	}
	id := p.ids.next(dst)
	ctx.Request.Header.SetCanonical([]byte(HeaderRequestID), id)
	return id
}

func (p *Proxy) recoverPanic(ctx *fasthttp.RequestCtx, id []byte) {
	r := recover()
	if r == nil {
		return
	}
	p.log.Error().Interface("panic", r).Bytes("request_id", id).Str("stack", string(debug.Stack())).
		Msg("lb: recovered panic while proxying; answered 500 and kept serving")
	writeError(ctx, fasthttp.StatusInternalServerError, "internal error in the proxy")
	ctx.Response.Header.SetCanonical([]byte(HeaderRequestID), id)
}

// forward sends the client's request upstream and turns failures into V2
// errors: 503 when no backend took it, 504/502 when it may have been sent,
// nothing at all when its client has gone, 503 with the gate's error when
// it refused the answer. It returns DoRouteFor's error.
func (p *Proxy) forward(ctx *fasthttp.RequestCtx, id []byte, deadline time.Time, client Client, gate AnswerGate) error {
	prepareUpstream(ctx)
	err := p.DoRouteFor(&ctx.Request, &ctx.Response, deadline, nil, client, gate)
	switch {
	case err == nil:
		// A worker closing its connection must not close the client's.
		ctx.Response.Header.ResetConnectionClose()
	case errors.Is(err, ErrClientGone):
		p.log.Debug().Bytes("request_id", id).Msg("lb: client closed request (499): its upstream exchange was abandoned")
		answerNothing(ctx)
	case errors.Is(err, ErrAnswerRefused):
		p.log.Debug().Bytes("request_id", id).Err(err).Msg("lb: answer refused from its header; its upstream connection was closed")
		writeError(ctx, fasthttp.StatusServiceUnavailable, refusalMessage(err))
	case errors.Is(err, ErrNoBackend):
		p.log.Warn().Bytes("request_id", id).Err(err).Msg("lb: no backend took the request")
		writeError(ctx, fasthttp.StatusServiceUnavailable, "no backend available")
	default:
		p.log.Warn().Bytes("request_id", id).Err(err).
			Msg("lb: upstream request failed after it may have been sent; not retried")
		if isTimeout(err) {
			writeError(ctx, fasthttp.StatusGatewayTimeout, "upstream timed out")
		} else {
			writeError(ctx, fasthttp.StatusBadGateway, "upstream failed before completing its response")
		}
	}
	return err
}

// ErrNoBackend is returned (wrapped) by Do when the request reached no
// backend: the pool is empty, or every backend was unreachable. The caller
// may safely retry it.
var ErrNoBackend = errors.New("no backend took the request")

// Do sends req to the backend with the fewest requests in flight and reads
// its answer into resp. It moves to another backend only while the request
// is provably unsent (dial failed, no free connection, or its bytes could
// not be written); each backend is tried at most once (one more time after
// a write failure, which usually means a stale pooled connection), bounded
// by the pool size plus slack for pools swapped mid-request. Any other error means the
// request may have run and is returned as is.
func (p *Proxy) Do(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	return p.DoRoute(req, resp, deadline, nil)
}

// DoRoute is Do among only the backends of route (nil: all): the least
// loaded of those takes the request, ties broken by the route's own
// rotation, and retries stay among them. The route's predicate is asked
// at each pick, so a backend it starts or stops accepting mid-request is
// seen by the next pick. A request no backend of the route took fails
// with ErrNoBackend, like one that found the pool empty. This is how a
// caller whose backends differ in what they can serve (a prep worker's
// infer workers, each with the models it loaded) routes by a key without
// the lb knowing what the key is.
func (p *Proxy) DoRoute(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time, route *Route) error {
	return p.DoRouteFor(req, resp, deadline, route, nil, nil)
}

// DoRouteFor is DoRoute for a request whose caller may go away: client,
// if not nil, is watched (or polled) while the request waits on a
// backend (see ServeHTTPFor and Client); once it has gone the upstream
// connection is closed, no other backend is tried, and DoRouteFor returns
// an error wrapping ErrClientGone, unless the answer was already whole.
// gate, if not nil, is asked about the answer from its header
// (answergate.go): one it refuses is never read, its connection is
// closed, and DoRouteFor returns an error wrapping ErrAnswerRefused.
//
// The watch is ended and forgotten even if the exchange panics (a
// caller such as ServeHTTPFor recovers and its server reuses req):
// left behind, it would watch the client for ever and send the next
// request on req through it.
func (p *Proxy) DoRouteFor(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time, route *Route, client Client, gate AnswerGate) (err error) {
	if client == nil && gate == nil {
		return p.doRoute(req, resp, deadline, route, nil)
	}
	u := &upstream{deadline: deadline, gate: gate}
	if client != nil {
		u.w = startWatch(client)
	}
	w := u.w
	p.exchanges.Store(req, u)
	defer func() {
		p.exchanges.Delete(req)
		if w != nil && w.end() && err != nil {
			err = fmt.Errorf("%w (the backend's exchange then failed: %v)", ErrClientGone, err)
		}
	}()
	return p.doRoute(req, resp, deadline, route, w)
}

// doRoute is DoRouteFor; w (nil: none) is the request's watch.
func (p *Proxy) doRoute(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time, route *Route, w *watch) error {
	turn, allow := &p.turn, (func(string) bool)(nil)
	if route != nil {
		turn, allow = &route.turn, route.allow
	}
	var triedBuf [8]*backend
	tried := triedBuf[:0]
	limit := len(p.pool.Load().backends) + 3
	var lastErr error
	staleRetried, repicked := false, false
	for range limit {
		pool := p.pool.Load()
		b := pool.pick(turn.Add(1), tried, allow)
		if b == nil && !repicked && p.pool.Load() != pool {
			// The backends changed while this pick ran: allow may already
			// judge by the new list (the prep worker's routes move to the
			// infer workers it is given, then the backends follow). Pick
			// once more from the new pool rather than answer "no backend".
			repicked = true
			b = p.pool.Load().pick(turn.Add(1), tried, allow)
		}
		if b == nil {
			break
		}
		tried = append(tried, b)
		if !b.acquire() {
			continue // removed since the pool snapshot was taken
		}
		err := p.send(b, req, resp, deadline)
		if err == nil {
			return nil
		}
		if !neverSent(err) || w != nil && w.isAbandoned() {
			return &BackendError{Socket: b.socket, Name: b.name, Err: err}
		}
		var we *requestWriteError
		if errors.As(err, &we) && !staleRetried {
			// Most likely a pooled connection the worker closed (it died
			// or was replaced under the same socket): the next attempt
			// may dial the same backend afresh, once.
			staleRetried = true
			tried = tried[:len(tried)-1]
		}
		p.log.Warn().Str("backend", b.name).Err(err).Msg("lb: request not sent to backend; trying another")
		lastErr = err
	}
	if lastErr == nil {
		if allow != nil {
			return fmt.Errorf("%w: no backend in the pool is allowed to take it", ErrNoBackend)
		}
		return fmt.Errorf("%w: the pool is empty", ErrNoBackend)
	}
	return fmt.Errorf("%w: %v", ErrNoBackend, lastErr)
}

// BackendError is DoRouteFor's error once a backend may have got the
// request: which backend (its Socket, unique to one worker process in
// both the lb's users) and what failed. The prep worker names the infer
// worker that died under a request with it, and the master the prep
// worker, so that a crash is matched to the worker it happened on.
type BackendError struct {
	Socket, Name string
	Err          error
}

func (e *BackendError) Error() string { return "backend " + e.Name + ": " + e.Err.Error() }
func (e *BackendError) Unwrap() error { return e.Err }

// prepareUpstream adjusts what fasthttp would otherwise change or refuse.
func prepareUpstream(ctx *fasthttp.RequestCtx) {
	// The server already recorded the client's Connection: close; the
	// upstream connection is ours to keep alive.
	ctx.Request.Header.ResetConnectionClose()
	// Send the client's Host header as is rather than one rebuilt from the
	// parsed (lowercased) URI.
	ctx.Request.UseHostHeader = true
	// HostClient refuses an https URI on a plain connection; a TLS public
	// listener must still reach the workers over plain Unix sockets.
	if ctx.IsTLS() {
		ctx.Request.URI().SetScheme("http")
	}
}

// send does one upstream exchange; the deferred release keeps the in-flight
// count right even if fasthttp panics.
func (p *Proxy) send(b *backend, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (err error) {
	defer b.release()
	err = b.client.DoDeadline(req, resp, deadline)
	if err != nil {
		b.errors.Add(1)
	}
	return err
}

// neverSent reports whether err proves the backend never got the whole
// request: the dial failed, no connection was free, or writing it failed.
func neverSent(err error) bool {
	var de *dialError
	var we *requestWriteError
	return errors.As(err, &de) || errors.As(err, &we) || errors.Is(err, fasthttp.ErrNoFreeConns)
}

// StatusClientClosedRequest is the status ServeHTTPFor leaves on a
// request whose client went away (nginx's 499); no client sees it.
const StatusClientClosedRequest = 499

// answerNothing makes the server write no response to ctx, whose client
// has gone, and close its connection.
func answerNothing(ctx *fasthttp.RequestCtx) {
	ctx.Response.Reset()
	ctx.SetStatusCode(StatusClientClosedRequest)
	ctx.SetConnectionClose()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(net.Conn) {}) // the server closes the connection after it
}

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
