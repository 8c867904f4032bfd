package front

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/drain"
	"github.com/supervisor-dev/supervisor/internal/osmem"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/quarantine"
	"github.com/supervisor-dev/supervisor/supervisor/status"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
)

// Backend is what the front asks of the master: the config in force (a
// reload replaces it; the front reads it once per request) and what
// /v2/health/ready answers.
type Backend interface {
	Config() *config.Config
	Readiness() Readiness
}

// Readiness is the master's answer to /v2/health/ready. NotReady says why
// it does not serve ("" = ready: 200); Degraded names the worker
// positions whose boots keep failing, listed in the body either way.
type Readiness struct {
	NotReady string
	Degraded []string
}

// Proxy is the part of the lb (lb.Proxy) the front sends requests
// through: admitted inference requests, prefix checks, request ids.
type Proxy interface {
	// ServeHTTPFor answers ctx through a worker and returns why none
	// answered (lb.ErrNoBackend: none took it; lb.ErrClientGone: client
	// went away, and nothing is answered; lb.ErrAnswerRefused: gate
	// refused the answer), nil when one did.
	ServeHTTPFor(ctx *fasthttp.RequestCtx, deadline time.Time, client lb.Client, gate lb.AnswerGate) error
	SetRequestID(ctx *fasthttp.RequestCtx)
	Do(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error
}

// Options are what a Front needs besides its Backend and Proxy.
type Options struct {
	// Version is reported by GET /v2.
	Version string
	// Repository answers the routes under RepositoryPrefix; nil answers
	// them 404.
	Repository Repository
	// Logging answers LoggingPath; nil answers it 404.
	Logging Logging
	// Tracing traces sampled inference requests and answers the trace
	// routes (trace.go); nil: tracing off, the routes answer 404.
	Tracing *Tracing
	Log     zerolog.Logger
	// InferExited and PrepExited tell the poison quarantine how a worker
	// under a request exited (quarantine.Options).
	InferExited func(socket string, wait time.Duration) (quarantine.Exit, bool)
	PrepExited  func(socket string, wait time.Duration) (quarantine.Exit, bool)
	// ModelIdentity is the content identity of the file model is served
	// from (internal/modelid), part of its quarantine keys
	// (quarantine.Options). Nil, or "": none.
	ModelIdentity func(model string) string
	// ServedName is the served name (internal/v2 versions.go) a route of
	// a model asks for: the version it names, or the highest ready one;
	// the model the quarantine keys and counts a request under. Nil: the
	// route's model.
	ServedName func(v2.Route) string
}

// Front is the public listener's server: admission, body reading and its
// budgets, local routes, and the hand-off to the lb. Its zero value is
// not usable: use New.
type Front struct {
	b     Backend
	proxy Proxy
	opts  Options
	log   zerolog.Logger

	// adm is the admission state the gRPC front shares: keys, rate
	// limits, readiness, max_in_flight and the body budget.
	adm *admission.Gate
	// draining asks clients to close their connections (Drain).
	draining atomic.Bool

	// admissions carries header-time verdicts to the handler
	// (admission.go).
	admissions admissions
	bodies     bodyCounts  // body bytes read, prefix checks (precheck.go)
	conns      osmem.Gauge // open public connections (connections.go)
	quiet      drain.Quiet // since when each is between requests (connections.go)
	// sampled counts the requests considered for the sampled request log.
	sampled atomic.Uint64
	// guard is the poison quarantine around the forward path
	// (forward.go).
	guard *quarantine.Guard
	// shm holds the system shared memory regions clients register
	// (sharedmemory.go).
	shm *sysshm.Registry
}

// New returns a front that serves nothing (every inference route 503)
// until SetServing(true), with no API keys until SetKeys.
func New(b Backend, p Proxy, opts Options) *Front {
	f := &Front{b: b, proxy: p, opts: opts, log: opts.Log}
	f.adm = admission.New(f.cfg, opts.Log)
	f.shm = sysshm.New()
	f.guard = quarantine.New(quarantine.Options{Config: f.cfg, Budget: f.adm.Bodies, Log: opts.Log,
		InferExited: opts.InferExited, PrepExited: opts.PrepExited, ModelIdentity: opts.ModelIdentity, ServedName: opts.ServedName,
		Spliced: f.spliced})
	return f
}

// SharedMemory is the system shared memory registry, whose descriptors
// the prep workers ask for (sysshm.Registry.ServeWorker).
func (f *Front) SharedMemory() *sysshm.Registry { return f.shm }

// cfg is the config in force.
func (f *Front) cfg() *config.Config { return f.b.Config() }

// Admission is the admission state this front decides with, for the
// gRPC front to share (grpcfront.Options.Admit and Budget).
func (f *Front) Admission() *admission.Gate { return f.adm }

// SetKeys puts keys (admission.LoadKeys) in force for the requests
// decided from now (admission.Gate.SetKeys).
func (f *Front) SetKeys(keys *admission.Keys) {
	f.adm.SetKeys(keys)
	// The regions of a key no longer accepted serve no request: their
	// descriptors and mappings are let go (sysshm).
	f.shm.Retain(keys.Owners())
}

// SetServing opens (true) or closes inference routes: while false they
// are refused 503 from their header. It stays true while the listener
// drains, so requests still arriving on open keep-alive connections are
// served, not refused.
func (f *Front) SetServing(on bool) { f.adm.SetServing(on) }

// Drain makes every answer from now ask its client to close the
// connection, so that keep-alive clients move to the listener's next
// owner (a new master after an upgrade, or a closed port after a stop).
func (f *Front) Drain() { f.draining.Store(true) }

// BodyCounts are the body counters now (and the rate limit's Redis
// fallbacks), for /metrics.
func (f *Front) BodyCounts() status.BodyCounts {
	c := f.bodies.snapshot()
	c.RateLimitFallbacks = f.adm.RateLimitFallbacks()
	c.PoisonFallbackKeys = f.guard.FallbackKeys()
	return c
}

// Listener is the public listener CapConnections returns: it admits at
// most limits.max_connections clients and can stop listening for good
// (StopListening, internal/listenstop) on a stop that hands over to no one.
type Listener interface {
	net.Listener
	StopListening() error
}

// CapConnections wraps the public listener in the limits.max_connections
// cap (conncap.go); serve the Server on what it returns.
func (f *Front) CapConnections(ln net.Listener, maxConns int) Listener {
	return f.capConnections(ln, maxConns)
}
