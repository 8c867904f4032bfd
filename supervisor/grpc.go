package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/supervisor-dev/supervisor/internal/listenstop"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront"
)

// The gRPC listener (grpc.listen) is grpcfront's server; every RPC reaches
// the master as the V2 HTTP request that answers it, through
// the front's ServeInternal: the public listener's admission, its local
// routes and its lb, so there is one way to the workers. Like the metrics
// listener it is opened through the upgrader (an upgrade hands it over),
// served from startup (before a parent's hand-over: once the workers are
// up), and drained in shutdown alongside the public listener, before the
// workers stop.

// The admission Gate the front decides with is the gRPC messages'
// budget: its body budget (admission.Bodies) lets the large message
// waiting longest take the room given back first.
var _ grpcfront.Budget = (*admission.Gate)(nil)

// grpcListener is the master's gRPC server and its listener; nil when
// grpc.listen is "".
type grpcListener struct {
	m   *Master
	srv *grpcfront.Server
	ln  *listenstop.Listener
}

// listenGRPC opens the gRPC listener.
func (m *Master) listenGRPC() (*grpcListener, error) {
	c := m.cfg()
	if c.GRPC.Listen == "" {
		return nil, nil
	}
	tcp, err := m.opts.Upgrader.Listen("tcp", c.GRPC.Listen)
	if err != nil {
		return nil, fmt.Errorf("gRPC listener on %q: %w (is another instance or Triton using it? set grpc.listen, or \"\" to turn it off)", c.GRPC.Listen, err)
	}
	l := c.Limits
	srv := grpcfront.New(grpcfront.Options{
		Handler:              m.front.ServeInternal,
		MaxMessageBytes:      int(c.MaxBodyBytes),
		MaxConcurrentStreams: c.GRPC.MaxConcurrentStreams,
		MaxConnections:       c.GRPC.MaxConnections,
		MaxRPCs:              c.GRPC.MaxRPCs,
		AbusePenalty:         c.GRPC.AbusePenalty.Duration,
		MaxHeaderBytes:       int(l.MaxHeaderBytes),
		HandshakeTimeout:     l.ReadTimeout.Duration,
		IdleTimeout:          l.IdleTimeout.Duration,
		Timeouts: grpcfront.Timeouts{Message: l.BodyTimeout.Duration, StreamIdle: l.IdleTimeout.Duration,
			Write: l.WriteTimeout.Duration},
		Admit:  m.front.Admission().AdmitMessage,
		Budget: m.front.Admission(),
		Log:    m.log,
		TLS:    m.tls.GRPC(),
	})
	return &grpcListener{m: m, srv: srv, ln: listenstop.Wrap(tcp)}, nil
}

// serve starts serving; a failure of the listener is logged (the public
// listener keeps serving).
func (g *grpcListener) serve() {
	if g == nil {
		return
	}
	go func() {
		// net.ErrClosed: the socket was stopped (stopListening) before
		// grpc-go's own stop, which would have ended Serve quietly.
		if err := g.srv.Serve(g.ln); err != nil && !errors.Is(err, net.ErrClosed) {
			g.m.log.Error().Err(err).Str("listen", g.ln.Addr().String()).Msg("gRPC listener failed; gRPC clients get no answer until a restart")
		}
	}()
}

// drain stops the gRPC listener, letting RPCs in flight finish until ctx
// ends (shutdown_timeout).
func (g *grpcListener) drain(ctx context.Context) {
	if g == nil {
		return
	}
	if !g.srv.Stop(ctx) {
		g.m.log.Warn().Msg("shutdown_timeout reached with gRPC requests still in flight")
	}
	_ = g.ln.Close() // Stop closed it if it was served; not otherwise
}

// listener is the socket, for stopSocket; nil without a gRPC listener.
func (g *grpcListener) listener() *listenstop.Listener {
	if g == nil {
		return nil
	}
	return g.ln
}

// close closes the listener (a second close is harmless): on the paths
// where the master ends without draining it.
func (g *grpcListener) close() {
	if g != nil {
		_ = g.ln.Close()
	}
}

// grpcReloadable rejects a reload that changes the gRPC listener: its
// socket and server options are set at startup.
func grpcReloadable(old, cfg *config.Config) error {
	if old.GRPC != cfg.GRPC {
		return fmt.Errorf("grpc: changing it (%+v to %+v) needs `supervisor upgrade` or a restart; nothing was changed", old.GRPC, cfg.GRPC)
	}
	return nil
}
