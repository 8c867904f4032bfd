package lb

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Backend names one worker process the proxy may forward to.
type Backend struct {
	// Name identifies the worker process, e.g. "prep-0#3". It must be unique
	// per process: SetBackends matches old and new pools by Name, and a Name
	// given a different Socket is treated as a new backend.
	Name string
	// Socket is the path of the worker's Unix socket.
	Socket string
}

// BackendStats is a snapshot of one backend's counters.
type BackendStats struct {
	Name string
	// InFlight is the number of requests currently dispatched to it.
	InFlight int64
	// Requests counts every dispatch, including ones that failed to dial and
	// were retried elsewhere.
	Requests uint64
	// Errors counts dispatches that failed, whether or not the request was
	// then retried on another backend.
	Errors uint64
}

// IdleConnTimeout is how long the proxy keeps an unused keep-alive
// connection to a worker. Workers must keep idle connections open longer,
// or a reuse racing their close fails the request (see the package doc).
const IdleConnTimeout = 10 * time.Second

// backend is one worker as the proxy sees it: its connection pool and the
// counters that drive selection and draining. It outlives its pool
// membership while requests are still in flight on it.
type backend struct {
	name   string
	socket string
	client *fasthttp.HostClient

	inflight atomic.Int64
	requests atomic.Uint64
	errors   atomic.Uint64

	// removed is set when SetBackends drops the backend; a request that
	// picked it from a stale pool snapshot sees it and goes elsewhere.
	removed atomic.Bool
	// watched tells release that reaching zero in flight matters: someone
	// waits in Idle, or the backend is removed and its connections must be
	// closed. It keeps the common release path to one atomic load.
	watched atomic.Bool

	mu   sync.Mutex    // guards idle and the watched/removed transitions
	idle chan struct{} // closed when inflight reaches zero; nil if unwatched
}

func newBackend(spec Backend, opts Options, rt fasthttp.RoundTripper) *backend {
	return &backend{
		name:   spec.Name,
		socket: spec.Socket,
		client: &fasthttp.HostClient{
			// Addr is only a label: the dialer ignores it. A comma in it
			// would make fasthttp dial several times per connection.
			Addr:                     "lb-backend",
			DialTimeout:              unixDialer(spec.Name, spec.Socket),
			MaxConns:                 opts.MaxConnsPerBackend,
			MaxIdleConnDuration:      IdleConnTimeout,
			ReadTimeout:              opts.Timeout,
			WriteTimeout:             opts.Timeout,
			ConnPoolStrategy:         fasthttp.LIFO, // reuse the freshest connection, let spare ones expire
			NoDefaultUserAgentHeader: true,          // forward the client's headers, add none
			DisablePathNormalizing:   true,
			// fasthttp retries idempotent requests on its own, possibly after
			// they were sent; the proxy decides retries itself, on facts.
			MaxIdemponentCallAttempts: 1,
			RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
			Transport:                 rt, // closes a watched request's connection when its client goes
		},
	}
}

// acquire counts a request on b. It reports false, having undone the count,
// if b was removed meanwhile. The increment comes before the removed check
// and SetBackends sets removed before anyone reads inflight in Idle, so
// either this request backs off or Idle waits for it.
func (b *backend) acquire() bool {
	b.inflight.Add(1)
	if b.removed.Load() {
		b.release()
		return false
	}
	b.requests.Add(1)
	return true
}

func (b *backend) release() {
	if b.inflight.Add(-1) == 0 && b.watched.Load() {
		b.settle()
	}
}

// settle runs when b may have become idle: if b is removed it closes its
// pooled connections (all idle by then: fasthttp returns a connection to the
// pool before DoDeadline returns), then it wakes Idle waiters.
func (b *backend) settle() {
	b.mu.Lock()
	if b.inflight.Load() != 0 {
		b.mu.Unlock()
		return
	}
	// Close connections before waking waiters, so a master that stops the
	// worker as soon as Idle fires leaves no half-open connection behind.
	if b.removed.Load() {
		b.client.CloseIdleConnections()
	} else {
		b.watched.Store(false)
	}
	if b.idle != nil {
		close(b.idle)
		b.idle = nil
	}
	b.mu.Unlock()
}

// idleChan returns a channel closed once b has no request in flight.
func (b *backend) idleChan() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watched.Store(true) // before reading inflight: pairs with release
	if b.inflight.Load() == 0 {
		if !b.removed.Load() && b.idle == nil {
			b.watched.Store(false)
		}
		return closedChan()
	}
	if b.idle == nil {
		b.idle = make(chan struct{})
	}
	return b.idle
}

// retire stops new requests reaching b and closes its connections once the
// ones in flight are done.
func (b *backend) retire() {
	b.mu.Lock()
	b.removed.Store(true)
	b.watched.Store(true)
	b.mu.Unlock()
	if b.inflight.Load() == 0 {
		b.settle()
	}
}

// revive puts a retired backend that is still known back in service.
func (b *backend) revive() {
	b.mu.Lock()
	b.removed.Store(false)
	if b.idle == nil {
		b.watched.Store(false)
	}
	b.mu.Unlock()
}

func (b *backend) stats() BackendStats {
	return BackendStats{
		Name:     b.name,
		InFlight: b.inflight.Load(),
		Requests: b.requests.Load(),
		Errors:   b.errors.Load(),
	}
}

func closedChan() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
