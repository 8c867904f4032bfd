package grpcfront

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

// Timeouts bound how long one stream may hold the master while it waits
// on its client: gRPC itself bounds none of these waits (a stream with
// no grpc-timeout lives as long as its connection, and its connection as
// long as one stream is open), so without them a client could park up to
// MaxConnections x MaxConcurrentStreams handlers, each holding what it
// has received so far, for ever. A timeout that fires cancels the
// stream's context: the wait in progress ends, the handler returns and
// the client gets the stream's status (CANCELLED) or a reset. A write
// timeout also closes the stream's connection, as HTTP's write_timeout
// does: the answers a client does not take stay queued on the connection
// (behind them, the stream's end) however the stream ends, so a client
// could otherwise pile one answer window per abandoned stream on it.
type Timeouts struct {
	// Message bounds the wait from a unary RPC's header to its whole
	// message (limits.body_timeout): a unary client sends the message
	// right after the header, so this is the time to receive it, a
	// trickled one included. gRPC tells nothing of a message's progress
	// before it is whole, so there is no rate extension as for an HTTP
	// body. It is also the longest a connection waits for room for a
	// message in the body budget before it is closed (see h2conn.Wire). 0: no
	// bound.
	Message time.Duration
	// StreamIdle bounds a streaming RPC's wait for its next message,
	// while none of its requests is being answered (limits.idle_timeout,
	// as for an idle keep-alive connection). 0: no bound.
	StreamIdle time.Duration
	// Write bounds each wait for the client to take an answer (flow
	// control: a client that does not read stops the master's sends),
	// and each write to a connection's socket (limits.write_timeout);
	// either closes the connection. 0: no bound.
	Write time.Duration
}

// watchdog cancels a stream's context when the wait it is armed for
// outlasts its bound. One per stream; arm and disarm may be called from
// the stream's handler while the timer fires: a timer that fired for a
// wait which has since ended, its fire already started when arm stopped
// it, must not act on the next wait (a message's bound, stale, closing
// the connection as if the answer armed after it had not been taken),
// so fire acts only once the wait armed now has passed its deadline.
// Nor may a wait armed once the stream has ended: a unary handler whose
// client cancelled returns after the stream's end and arms the bound of
// an answer nobody will take, which would close the connection and
// strike its address (cmd/hostile's grpc-cancel-slow: a client that
// cancels RPCs lost its connection write_timeout after its first cancel).
type watchdog struct {
	mu       sync.Mutex
	timer    *time.Timer
	deadline time.Time // when the wait armed now times out (zero: none armed)
	writing  bool      // the wait armed now is a write: its timeout closes the connection
	over     bool      // the stream has ended: nothing is armed any more
	cancel   context.CancelFunc
	conn     *h2conn.Entry  // the stream's connection (nil: unknown)
	rpcs     *rpcCap        // its place is given back when it ends
	charge   *budget.Charge // its metadata's, released when it ends (nil: none)
	got      atomic.Bool    // the first message is in
	fired    atomic.Bool    // a timeout ended the stream
}

// watchCtx is a stream's context carrying its watchdog (one allocation
// less than context.WithValue: this runs for every stream, a rapid
// reset's included).
type watchCtx struct {
	context.Context
	w *watchdog
}

type watchdogKey struct{}

func (c *watchCtx) Value(key any) any {
	if key == (watchdogKey{}) {
		return c.w
	}
	return c.Context.Value(key)
}

// watch derives the stream's context, armed for d (no bound when 0); the
// timer is stopped, its place in rpcs given back and its metadata's
// charge released when the stream ends: one context.AfterFunc, so one
// goroutine per stream's end, not one for each (issue 33).
func watch(ctx context.Context, d time.Duration, conn *h2conn.Entry, rpcs *rpcCap, charge *budget.Charge) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	w := &watchdog{cancel: cancel, conn: conn, rpcs: rpcs, charge: charge}
	w.timer = time.AfterFunc(time.Hour, w.fire)
	w.timer.Stop()
	w.arm(d, false)
	context.AfterFunc(ctx, w.ended)
	return &watchCtx{Context: ctx, w: w}
}

// watchdogOf is the stream's watchdog; nil (whose methods do nothing)
// for a context watch did not make.
func watchdogOf(ctx context.Context) *watchdog {
	w, _ := ctx.Value(watchdogKey{}).(*watchdog)
	return w
}

// connection is the stream's connection (nil: unknown).
func (w *watchdog) connection() *h2conn.Entry {
	if w == nil {
		return nil
	}
	return w.conn
}

// ended runs once the stream is over: a stream the client ended before
// its first message (a reset, mostly) counts against its connection.
func (w *watchdog) ended() {
	w.mu.Lock()
	w.over = true
	w.mu.Unlock()
	w.disarm()
	w.rpcs.give()
	w.charge.Release()
	if !w.got.Load() && !w.fired.Load() {
		w.conn.EndedEarly()
	}
}

// fire ends the stream whose wait timed out, and its connection when the
// wait was a write; it does nothing when the wait armed now has not timed
// out (the timer fired for a wait that ended meanwhile).
func (w *watchdog) fire() {
	w.mu.Lock()
	due := !w.deadline.IsZero() && !time.Now().Before(w.deadline)
	writing := w.writing
	w.mu.Unlock()
	if !due {
		return
	}
	w.fired.Store(true)
	w.cancel()
	if writing {
		w.conn.Close()
	}
}

// arm starts (or restarts) the bound of one wait, a write or not; 0
// disarms, and so does any arm once the stream has ended.
func (w *watchdog) arm(d time.Duration, write bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Stop()
	w.writing = write
	w.deadline = time.Time{}
	if d > 0 && !w.over {
		// Set before the timer, which fires no earlier than it.
		w.deadline = time.Now().Add(d)
		w.timer.Reset(d)
	}
}

// disarm ends the bound: the wait it was armed for is over.
func (w *watchdog) disarm() { w.arm(0, false) }

// received disarms the wait for a message, which is in.
func (w *watchdog) received() {
	if w != nil {
		w.got.Store(true)
		w.disarm()
	}
}

// unaryWatch disarms the message bound once the message is in (a unary
// handler runs only then), and arms the write bound for the answer,
// which gRPC sends after the handler returns.
func (t Timeouts) unaryWatch(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	w := watchdogOf(ctx)
	w.received()
	resp, err := h(ctx, req)
	w.arm(t.Write, true)
	if err != nil {
		return resp, err
	}
	// The stream ends, and w with it, once the answer is queued: the
	// answer keeps its own bound until written (answerbound.go).
	return t.bound(resp, w.connection()), nil
}

// streamWatch bounds each wait of a streaming RPC: for its next message
// (StreamIdle) and for the client to take an answer (Write).
func (t Timeouts) streamWatch(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	w := watchdogOf(ss.Context())
	w.disarm() // a stream's handler starts at its header, with no message yet
	return h(srv, &watchedStream{ServerStream: ss, w: w, t: t})
}

// watchedStream is a ServerStream whose waits are bounded.
type watchedStream struct {
	grpc.ServerStream
	w *watchdog
	t Timeouts
}

// RecvMsg bounds the wait for the next message (StreamIdle).
func (s *watchedStream) RecvMsg(m any) error {
	s.w.arm(s.t.StreamIdle, false)
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		s.w.received()
	} else {
		s.w.disarm()
	}
	return err
}

func (s *watchedStream) SendMsg(m any) error {
	s.w.arm(s.t.Write, true)
	defer s.w.disarm()
	// Queued, m may outlive the wait (and the stream): it keeps its bound.
	return s.ServerStream.SendMsg(s.t.bound(m, s.w.connection()))
}
