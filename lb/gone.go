package lb

import (
	"errors"
	"net"
	"sync"
	"time"
)

// A request whose caller passes a gone predicate (DoRouteFor,
// ServeHTTPFor) is watched while it waits on a backend: a timer asks
// gone first ClientPoll after the exchange starts, then every ClientPoll,
// and once it reports true the exchange's upstream connection (that
// connection only, not the pool) is closed, so the worker sees the
// hang-up the way it sees a timed-out proxy's (worker.PeerClosed) and
// stops the work, and the call returns ErrClientGone. Nothing polls a
// request answered within ClientPoll: the common path costs a timer armed
// and stopped and a map entry (BenchmarkWatched). gone has no event to
// wait on (fasthttp does not read from a client while its handler runs),
// hence the polling.

// ClientPoll is how often a watched request asks whether its client has
// gone: the longest a worker goes on for nobody after the hang-up, before
// its own polling. A hop (master, then prep worker) holds what the request
// holds downstream (a prep worker's arena slot) for up to a poll after its
// client's hang-up; at 100 ms, 16 clients hanging up 50 ms into slow runs
// (cmd/hostile's hangup-slow) kept most of a prep worker's 64 slots held
// and legit requests sometimes got "arena full". One poll is a
// non-blocking peek on the client's socket (worker.BenchmarkPeerClosed:
// about 2.5 µs on a loaded 2-core EPYC), so a thousand slow requests in
// flight cost about 5% of a core per hop.
const ClientPoll = 50 * time.Millisecond

// ErrClientGone is returned (wrapped) by DoRouteFor and ServeHTTPFor
// when the request's client went away while it waited on a backend: the
// upstream connection was closed under the request, which the worker
// sees, and nobody reads an answer.
var ErrClientGone = errors.New("the client closed its connection before the answer: the upstream exchange was abandoned")

// watch is one request's watch on its client while it waits on a
// backend.
type watch struct {
	gone     func() bool
	deadline time.Time

	mu        sync.Mutex
	timer     *time.Timer
	conn      net.Conn // the upstream connection in use; nil between attempts
	ended     bool     // the exchange is over: the timer must not act
	abandoned bool     // gone said so; conn, if any, was closed
}

// startWatch arms the first poll of gone.
func startWatch(gone func() bool, deadline time.Time) *watch {
	w := &watch{gone: gone, deadline: deadline}
	w.mu.Lock()
	w.timer = time.AfterFunc(ClientPoll, w.poll)
	w.mu.Unlock()
	return w
}

// poll runs on the timer: it closes the upstream connection once gone
// says so, or polls again later. It holds mu across the close so an
// exchange that has handed its connection back to the pool (unuse) never
// has it closed under the next request.
func (w *watch) poll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended || w.abandoned {
		return
	}
	if !w.gone() {
		w.timer.Reset(ClientPoll)
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

// end stops the polling and reports whether the client was found gone.
func (w *watch) end() (abandoned bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	w.timer.Stop()
	return w.abandoned
}
