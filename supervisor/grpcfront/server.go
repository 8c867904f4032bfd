package grpcfront

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

// Options configure a Server.
type Options struct {
	// Handler answers the V2 HTTP request an RPC was turned into, as the
	// public listener would (admission, local routes, the lb). Required.
	Handler Handler
	// MaxMessageBytes is the largest request message gRPC accepts
	// (max_body_bytes); larger ones are refused RESOURCE_EXHAUSTED before
	// they are decoded. 0 is gRPC's default, 4 MiB.
	MaxMessageBytes int
	// MaxConcurrentStreams bounds the RPCs open at once on a connection
	// (0: 128).
	MaxConcurrentStreams int
	// MaxRPCs bounds the RPCs open at once across every connection,
	// from their header to their end; one more is refused
	// RESOURCE_EXHAUSTED at its header (0: no bound). Each costs the
	// master a handler goroutine and gRPC's stream (about 20 KiB) even
	// before its message is in, so without it the bound would be
	// MaxConnections x MaxConcurrentStreams of them.
	MaxRPCs int
	// MaxConnections bounds the open connections; one more is answered
	// GOAWAY at once and closed (0: no bound).
	MaxConnections int
	// MaxHeaderBytes bounds a request's metadata (0: gRPC's 16 MiB).
	MaxHeaderBytes int
	// HandshakeTimeout bounds a new connection's HTTP/2 preface (0: 20s).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection with no RPC for this long, and is
	// how long a connection may send nothing before the server pings it
	// (a client that does not answer within 20s is cut) (0: never).
	IdleTimeout time.Duration
	// AbusePenalty is the first wait between two new connections admitted
	// from a client address (IP) one of whose connections was closed for
	// misbehaviour, doubling with each closure up to 16x (see h2conn);
	// the address's open connections are untouched (0: off).
	AbusePenalty time.Duration
	// Budget, when set, is charged each message in assembly the length
	// its prefix declares (up to MaxMessageBytes), from the moment the
	// prefix arrives to the message's last byte (or its stream's or
	// connection's end); a connection whose next message has no room
	// is not read until it has, for at most Timeouts.Message, then
	// closed (see h2conn.Wire). Without it, the messages being received are
	// bounded only by MaxRPCs x MaxMessageBytes. It is also charged each
	// infer answer over 64 KiB until gRPC has written it (see
	// answerhold.go): one with no room is RESOURCE_EXHAUSTED.
	Budget Budget
	// Timeouts bound a stream's waits on its client (see Timeouts).
	Timeouts Timeouts
	// Admit, when set, refuses ModelInfer and ModelStreamInfer calls from
	// their header, before their message is read (see AdmitFunc).
	Admit AdmitFunc
	// Log receives what the server reports; the zero Logger drops it.
	Log zerolog.Logger
	// TLS, when set, is the server's TLS config (it must offer "h2" by
	// ALPN); its handshake is bounded by HandshakeTimeout. Nil: plain
	// HTTP/2.
	TLS *tls.Config
}

// Handler answers req, the V2 HTTP request the RPC whose context is rpc
// was turned into. rpc ends when the RPC's client cancels it, its
// deadline passes or its connection dies, and then nobody waits for the
// answer, which the Handler may act on (the master abandons the
// request's worker exchange).
//
// A Handler that charged the answer's bytes to the body budget from its
// header, before reading its body (the master: lb.AnswerGate), leaves
// the charge as req's user value AnswerChargeKey (a *budget.Charge of
// exactly the answer body's length): the server holds it until gRPC has
// written the answer, or gives it back at once. An answer that did not
// fit was never read: the Handler answers 503 with Retry-After
// (RESOURCE_EXHAUSTED) instead.
type Handler func(rpc context.Context, req *fasthttp.RequestCtx)

// AnswerChargeKey is the user value under which a Handler leaves the
// answer's charge (see Handler).
const AnswerChargeKey = "grpcfront.answerCharge"

// MinPingInterval is the shortest interval between keepalive pings a
// client may send; a client that pings more often is sent GOAWAY
// (ENHANCE_YOUR_CALM), so pings cannot be used to keep the master busy.
const MinPingInterval = 10 * time.Second

// The HTTP/2 flow-control windows the server offers. They are fixed,
// which turns off gRPC's window growth from its bandwidth estimate (up to
// 16 MiB per stream): a stream's window is what a client may push to it
// beyond the message being read (gRPC opens the window for the whole of
// a message as it reads it), so it bounds the master's memory held by a
// stream whose handler is busy, or blocked on a client that does not
// read its answers. The connection's window is updated as data arrives,
// not as it is read: it paces a connection and holds nothing.
const (
	StreamWindowBytes     = 1 << 20
	ConnectionWindowBytes = 16 << 20
)

// streamWorkers is how many goroutines the server keeps to run RPC
// handlers (grpc.NumStreamWorkers) instead of a new goroutine per
// stream. A handler's stack grows to tens of KiB on every RPC (gRPC's
// receive path, the HTTP request, the lb's round trip); a new goroutine
// starts small and copies its stack as it grows, each time: 6% of the
// master's CPU at one client, 11% at 64 (issue 33). A handler is busy
// for the whole round trip to the workers (a streaming RPC for its
// life), so the pool covers the RPCs in flight of a busy master; past
// it, gRPC falls back to a goroutine per stream. Idle workers cost
// their stacks, which the GC shrinks.
const streamWorkers = 128

// defaultMaxMessageBytes is gRPC's largest message when MaxMessageBytes
// is 0.
const defaultMaxMessageBytes = 4 << 20

// pingTimeout is how long a connection pinged after IdleTimeout of
// silence has to answer.
const pingTimeout = 20 * time.Second

// Server is the gRPC listener's server.
type Server struct {
	srv   *grpc.Server
	opts  Options
	conns *h2conn.Set         // the open connections, for the watchdogs
	wire  func() *h2conn.Wire // a connection's charges of its messages
}

// New builds a Server serving GRPCInferenceService, grpc.health.v1 and
// server reflection.
func New(o Options) *Server {
	if o.MaxConcurrentStreams == 0 {
		o.MaxConcurrentStreams = 128
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = 20 * time.Second
	}
	maxMsg := int64(o.MaxMessageBytes)
	if maxMsg == 0 {
		maxMsg = defaultMaxMessageBytes
	}
	conns := h2conn.NewSet(o.AbusePenalty)
	answers := &heldAnswers{budget: o.Budget, write: o.Timeouts.Write}
	sopts := []grpc.ServerOption{
		grpc.MaxConcurrentStreams(uint32(o.MaxConcurrentStreams)),
		grpc.ConnectionTimeout(o.HandshakeTimeout),
		// Pings without an RPC open count as abuse (gRPC allows one per
		// 2h then): clients keep no idle connection alive with them.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: MinPingInterval, PermitWithoutStream: false}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: o.IdleTimeout, Time: o.IdleTimeout, Timeout: pingTimeout}),
		grpc.InitialWindowSize(StreamWindowBytes),
		grpc.InitialConnWindowSize(ConnectionWindowBytes),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.InTapHandle(tapHandle(o.Admit, o.Timeouts, conns, newRPCCap(o.MaxRPCs), o.Budget)),
		grpc.ChainUnaryInterceptor(o.Timeouts.unaryWatch),
		grpc.ChainStreamInterceptor(o.Timeouts.streamWatch),
		grpc.ForceServerCodecV2(answerCodec{newDecodeCap(maxMsg), answers}),
		grpc.UnknownServiceHandler(unknownMethod),
	}
	if o.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	if o.MaxMessageBytes > 0 {
		sopts = append(sopts, grpc.MaxRecvMsgSize(o.MaxMessageBytes))
	}
	if o.MaxHeaderBytes > 0 {
		sopts = append(sopts, grpc.MaxHeaderListSize(uint32(o.MaxHeaderBytes)))
	}
	s := &Server{srv: grpc.NewServer(sopts...), opts: o, conns: conns, wire: func() *h2conn.Wire { return h2conn.NewWire(o.Budget, maxMsg, o.Timeouts.Message) }}
	s.srv.RegisterService(serviceDesc(), &service{h: o.Handler, answers: answers})
	healthpb.RegisterHealthServer(s.srv, &health{h: o.Handler})
	reflection.Register(s.srv)
	return s
}

// Serve accepts on ln until Stop; it returns nil after Stop.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(h2conn.NewListener(ln, s.opts.MaxConnections, s.conns, s.opts.Timeouts.Write, s.wire))
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop stops accepting and lets the RPCs in flight finish until ctx ends,
// then closes every connection (their RPCs fail UNAVAILABLE) and returns
// at once: a handler still running is not waited for (it is bounded by
// its own deadline, the lb's timeout). It closes the listener given to
// Serve: after an upgrade, the new master holds its own copy. It reports
// whether the drain finished in time.
func (s *Server) Stop(ctx context.Context) bool {
	done := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		// GracefulStop, still running, returns once the handlers do.
		s.srv.Stop()
		return false
	}
}
