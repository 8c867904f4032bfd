package lb

import (
	"errors"
	"net"
	"sync"
	"time"
)

// A request whose caller passes a Client (DoRouteFor, ServeHTTPFor) is
// watched while it waits on a backend: watchDelay after the exchange
// starts, the Client's Watch is asked to call back the moment the client
// hangs up (hangup.Peer: an epoll event on the client's socket; one that
// hung up already calls back at once), and the exchange's upstream
// connection (that connection only, not the pool) is then closed, so the
// worker sees the hang-up the way it sees a timed-out proxy's and stops
// the work, and the call returns ErrClientGone. A Client that cannot be
// watched (Watch fails: no socket under the connection; a GoneFunc) is
// polled instead: Gone is asked first ClientPoll after the exchange
// starts, then every ClientPoll. An RPC's context is watched, not polled
// (ContextClient: context.AfterFunc). A request answered
// within watchDelay costs an entry on the watch clock added and removed
// (watchclock.go) and a map entry (BenchmarkWatch); a slower one also a
// registration and its removal.

// watchDelay is how long a watched request waits on its backend before
// its Client is watched. Registering a socket with epoll and removing it
// cost about 3.5 us of CPU per request on a loaded 2-core box (against
// 16 us for the whole exchange with a trivial backend: BenchmarkWatch,
// CPU time, before the delay), which requests answered sooner need not
// pay; the hang-up of a slower one is seen at watchDelay at the latest.
// At 1 ms, MLP requests with 32 in flight (2.5 ms each) all paid it: a
// fifth more master CPU per request, an eighth fewer served
// (scripts/bench-grpc MODELS=mlp CONC=32; BenchmarkWatchSlow: 28 against
// 22 us of process CPU a request). At 10 ms a request that pays it has
// run thousands of times longer than the registration costs.
const watchDelay = 10 * time.Millisecond

// ClientPoll is how often a watched request whose Client cannot be
// watched asks whether its client has gone: then the longest a worker
// goes on for nobody after the hang-up, before its own polling. A hop (master, then prep worker) holds what the request
// holds downstream (a prep worker's arena slot) for up to a poll after its
// client's hang-up; at 100 ms, 16 clients hanging up 50 ms into slow runs
// (cmd/hostile's hangup-slow) kept most of a prep worker's 64 slots held
// and legit requests sometimes got "arena full". One poll is a
// non-blocking peek on the client's socket (hangup.BenchmarkPeerClosed:
// about 2.5 µs on a loaded 2-core EPYC), so a thousand slow requests in
// flight cost about 5% of a core per hop.
const ClientPoll = 50 * time.Millisecond

// A Client is who waits for a watched request's answer (DoRouteFor,
// ServeHTTPFor): how the lb learns that nobody does any more.
type Client interface {
	// Watch calls onGone once when the client goes, until the stop it
	// returns is called; stop returns once onGone will not run or has
	// returned. Watch must not call onGone on the caller's goroutine
	// (the lb holds the watch's lock across the call, and onGone takes
	// it); another goroutine's call waits for the lock. An
	// error means the client cannot be watched: the lb polls Gone
	// instead.
	Watch(onGone func()) (stop func(), err error)
	// Gone reports whether the client has gone. It must be cheap and
	// safe for concurrent use.
	Gone() bool
}

// GoneFunc is a Client that can only be polled: the predicate is its
// Gone, and its Watch always fails.
type GoneFunc func() bool

// Gone calls f.
func (f GoneFunc) Gone() bool { return f() }

// Watch fails: f can only be polled.
func (f GoneFunc) Watch(func()) (func(), error) { return nil, errPollOnly }

var errPollOnly = errors.New("a GoneFunc can only be polled")

// ErrClientGone is returned (wrapped) by DoRouteFor and ServeHTTPFor
// when the request's client went away while it waited on a backend: the
// upstream connection was closed under the request, which the worker
// sees, and nobody reads an answer.
var ErrClientGone = errors.New("the client closed its connection before the answer: the upstream exchange was abandoned")

// watch is one request's watch on its client while it waits on a
// backend.
type watch struct {
	client Client

	// at and index are the watch's place on the clock (guarded by the
	// clock's mu): when it acts next, and where it is listed (-1: not).
	at    time.Duration
	index int

	mu        sync.Mutex
	polling   bool     // client.Watch failed: the clock polls Gone
	stop      func()   // ends client.Watch; nil until it started
	conn      net.Conn // the upstream connection in use; nil between attempts
	ended     bool     // the exchange is over: the clock must not act
	abandoned bool     // the client has gone; conn, if any, was closed
}

// startWatch lists a watch of client on the clock, to start watchDelay
// from now.
func startWatch(client Client) *watch {
	w := &watch{client: client, index: -1}
	watches.add(w, watchDelay)
	return w
}

// tick runs on the clock, unlisted: the first time it watches the
// client, or when it cannot, starts polling; then it polls.
func (w *watch) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.ended || w.abandoned:
	case w.polling:
		w.poll()
	default:
		w.watch()
	}
}

// watch registers hungUp with the client, or falls back to polling its
// Gone. It runs under mu, so before end (which the handler that owns the
// client's connection calls before it returns): never on a connection
// the handler has let go. The client's callback waits for mu.
func (w *watch) watch() {
	stop, err := w.client.Watch(w.hungUp)
	if err == nil {
		w.stop = stop
		return
	}
	w.polling = true
	watches.add(w, ClientPoll-watchDelay)
}

// hungUp is the client's Watch callback: the client has gone.
func (w *watch) hungUp() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abandon()
}

// poll abandons the exchange once Gone says so, or polls again later.
func (w *watch) poll() {
	if !w.client.Gone() {
		watches.add(w, ClientPoll)
		return
	}
	w.abandon()
}

// abandon closes the upstream connection, unless the exchange is over.
// Its caller holds mu across the close so an exchange that has handed
// its connection back to the pool (unuse) never has it closed under the
// next request.
func (w *watch) abandon() {
	if w.ended || w.abandoned {
		return
	}
	w.abandoned = true
	if w.conn != nil {
		_ = w.conn.Close()
	}
}

// use records conn as the exchange's upstream connection. It reports
// false, recording nothing, when the client has already gone: the
// request must not be sent.
func (w *watch) use(conn net.Conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.abandoned {
		return false
	}
	w.conn = conn
	return true
}

// unuse forgets the upstream connection before it goes back to the pool
// or is closed, and reports whether poll closed it meanwhile.
func (w *watch) unuse() (closed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn = nil
	return w.abandoned
}

// isAbandoned reports whether the client was found gone.
func (w *watch) isAbandoned() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.abandoned
}

// end stops the watch or the polling and reports whether the client was
// found gone. It stops the watch outside mu: stop waits for a hungUp
// under way, which takes mu (and, the exchange ended, does nothing).
func (w *watch) end() (abandoned bool) {
	w.mu.Lock()
	w.ended = true
	abandoned, stop := w.abandoned, w.stop
	w.mu.Unlock()
	watches.remove(w) // after ended: a fire under way re-lists nothing
	if stop != nil {
		stop()
	}
	return abandoned
}
