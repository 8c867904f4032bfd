package front

import (
	"net"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/hangup"
	"github.com/supervisor-dev/supervisor/lb"
)

// A proxied request whose client hangs up while a worker works on it is
// abandoned: the lb watches clientGone and, the moment the client hangs
// up, closes the connection to the prep worker, which stops the request
// and closes its own to the infer worker, which stops the run. Without
// this the run went on until max_run_time, holding a prep place, an
// infer batch place and arena slots, for nobody. fasthttp does not read
// from a client while its handler runs, so the client's socket is
// watched for the hang-up with epoll (hangup.Peer: the peer's FIN, a
// reset), or, when it cannot be, peeked every lb.ClientPoll
// (hangup.PeerClosed). A client that only half-closes (shuts down its
// sending side and still reads) is taken as gone, as nginx takes it;
// curl, browsers and HTTP libraries do not do that. An RPC's request
// is watched through its context instead (ServeInternal's rpc,
// lb.ContextClient: the context's end calls back at once). Such requests are
// answered nothing, logged at debug with status 499 and counted
// (supervisor_client_closed_requests_total). A gRPC client whose deadline
// passes resets its stream as its own timer fires, so its RPC ends as a
// hang-up (499) when that reset reaches the master before the master's
// timer for the same deadline fires (504): either is true of the client.

// clientGone is the lb's Client for the public request ctx, or nil when
// its client cannot be asked (a connection with no socket under it).
func clientGone(ctx *fasthttp.RequestCtx) lb.Client {
	conn := socketOf(ctx.Conn())
	if conn == nil {
		return nil
	}
	return hangup.Peer{Conn: conn}
}

// socketOf is the connection under c's TLS and connection cap
// (lingerConn, over conncap.Conn), the one epoll or a peek can ask, or
// nil if it has none.
func socketOf(c net.Conn) net.Conn {
	c = underTLS(c)
	if cc, ok := c.(*lingerConn); ok {
		c = cc.Conn.Conn
	}
	if _, ok := c.(syscall.Conn); !ok {
		return nil
	}
	return c
}
