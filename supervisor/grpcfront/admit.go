package grpcfront

import (
	"context"
	"sync/atomic"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

// AdmitFunc decides, from an inference RPC's header alone, whether its
// message may be read: it answers as the public listener's header-time
// decision would (200 to go on; otherwise the status, the V2 error message
// and whether the refusal means "busy, retry"), and holds nothing. The
// RPC is decided again, fully, once its message is in (Handler).
type AdmitFunc func(h *fasthttp.RequestHeader) (httpStatus int, msg string, retryAfter bool)

// carriesTensors are the RPCs whose messages may be up to MaxMessageBytes.
var carriesTensors = map[string]bool{
	"/" + pb.GRPCInferenceService_ServiceDesc.ServiceName + "/ModelInfer":       true,
	"/" + pb.GRPCInferenceService_ServiceDesc.ServiceName + "/ModelStreamInfer": true,
}

// tapHandle runs on each new stream's header, before gRPC reads any of
// its message: it arms the stream's watchdog for the wait for its message
// (t.Message), with the means to close its connection (conns), and refuses an inference RPC at once when admit says so:
// gRPC receives a whole message before a handler runs, so without it a
// client with no valid key, or one calling while the master is not
// serving or is at max_in_flight, would make the master hold up to
// MaxMessageBytes per stream first. gRPC runs it on the connection's
// reader goroutine: admit must not block. A nil admit admits all. Then
// the RPC takes its place among rpcs, and its metadata is charged to
// budget (see metadataCost), both given back when it ends.
func tapHandle(admit AdmitFunc, t Timeouts, conns *h2conn.Set, rpcs *rpcCap, budget Budget) tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		conn := conns.Of(ctx)
		if conn.Closed() {
			// gRPC reads on what it had buffered of a connection closed
			// under it (a rapid reset's next streams): no handler for them.
			return ctx, errConnClosed
		}
		if admit != nil && carriesTensors[info.FullMethodName] {
			var h fasthttp.RequestHeader
			setForwarded(&h, info.Header)
			if code, msg, retry := admit(&h); code != fasthttp.StatusOK {
				return ctx, status.Error(Code(code, retry, nil), msg)
			}
		}
		if err := rpcs.take(); err != nil {
			return ctx, err
		}
		charge, err := chargeMetadata(budget, info.Header)
		if err != nil {
			rpcs.give()
			return ctx, err
		}
		return watch(ctx, t.Message, conn, rpcs, charge), nil
	}
}

var errConnClosed = status.Error(codes.Unavailable, "the connection was closed: too many streams ended before their message, or an answer not taken within limits.write_timeout")

// rpcCap counts the RPCs open across the listener (Options.MaxRPCs).
type rpcCap struct {
	max  int64
	open atomic.Int64
	busy error
}

func newRPCCap(maxRPCs int) *rpcCap {
	return &rpcCap{max: int64(maxRPCs), busy: status.Errorf(codes.ResourceExhausted,
		"server busy: %d gRPC calls are open (grpc.max_rpcs); retry later", maxRPCs)}
}

// take takes a place, or returns the refusal when none is left.
func (c *rpcCap) take() error {
	if c == nil {
		return nil
	}
	if c.open.Add(1) > c.max && c.max > 0 {
		c.open.Add(-1)
		return c.busy
	}
	return nil
}

// give gives a place back (nil: nothing to give).
func (c *rpcCap) give() {
	if c != nil {
		c.open.Add(-1)
	}
}

// setForwarded copies the forwarded metadata (API key, request id) to h.
func setForwarded(h *fasthttp.RequestHeader, md metadata.MD) {
	for _, f := range forwardedMetadata {
		if v := md.Get(f.key); len(v) > 0 {
			h.Set(f.header, v[0])
		}
	}
}
