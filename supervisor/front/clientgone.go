package front

import (
	"net"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/grpcfront"
	"github.com/supervisor-dev/supervisor/worker"
)

// A proxied request whose client hangs up while a worker works on it is
// abandoned: the lb polls clientGone (every lb.ClientPoll once the request
// has waited that long) and, once it is true, closes the connection to
// the prep worker, which stops the request and closes its own to the
// infer worker, which stops the run. Without this the run went on until
// max_run_time, holding a prep place, an infer batch place and arena
// slots, for nobody. fasthttp does not read from a client while its
// handler runs, so the client's socket is asked (worker.PeerClosed): end
// of file or a reset means it closed. A client that only half-closes
// (shuts down its sending side and still reads) is taken as gone, as
// nginx takes it. An RPC's request asks its context instead
// (grpcfront.RPCContext). Such requests are answered nothing, logged at
// debug with status 499 and counted (supervisor_client_closed_requests_total).

// clientGone is the lb's gone predicate for ctx, or nil when its client
// cannot be asked (a connection with no socket under it).
func clientGone(ctx *fasthttp.RequestCtx) func() bool {
	if rpc, ok := grpcfront.RPCContext(ctx); ok {
		return func() bool { return rpc.Err() != nil }
	}
	conn := socketOf(ctx.Conn())
	if conn == nil {
		return nil
	}
	return func() bool { return worker.PeerClosed(conn) }
}

// socketOf is the connection under c's connection cap (cappedConn, over
// conncap.Conn), the one a peek can ask, or nil if it has none.
func socketOf(c net.Conn) net.Conn {
	if cc, ok := c.(*cappedConn); ok {
		c = cc.Conn.Conn
	}
	if _, ok := c.(syscall.Conn); !ok {
		return nil
	}
	return c
}
