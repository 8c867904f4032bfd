package grpcfront

import (
	"context"
	"log"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

// Headers the master reads; see supervisor's admission and deadline.
const (
	timeoutHeader   = "X-Request-Timeout"
	headerLenHeader = "Inference-Header-Content-Length"
	requestIDHeader = "X-Request-Id"
)

// forwardedMetadata are the metadata keys copied to the HTTP request, and
// the header each becomes: the API key, the request id and the client's
// traceparent (read only when the master traces the request). Nothing else
// reaches the master's admission or the workers.
var forwardedMetadata = [...]struct{ key, header string }{
	{"authorization", "Authorization"},
	{"x-api-key", "X-API-Key"},
	{"x-request-id", requestIDHeader},
	{"traceparent", "Traceparent"}, // W3C trace context: the master's span's parent when traced
}

// exchange is one RPC's HTTP request and the answer to it. Exchanges
// are pooled (newExchange, release), as fasthttp's server reuses a
// connection's RequestCtx: a fresh Request and Response per RPC grew
// their header tables anew each time, a fifth of the master's
// allocations per unary ModelInfer (issue 33). The Handler keeps nothing
// of the ctx once it returns, as it keeps nothing of an HTTP request's.
type exchange struct {
	ctx  fasthttp.RequestCtx
	conn rpcConn
	// charge is the answer's charge the Handler left (AnswerChargeKey),
	// until the RPC takes it (answerCharge); release gives back one
	// nobody took.
	charge *budget.Charge
}

// rpcConn is what the Handler sees as the request's connection: the
// RPC's peer address, and nothing under it to read, write or watch
// (fasthttp's own RequestCtx.Init gives the same, allocated per call).
type rpcConn struct {
	net.Conn // nil: the Handler never reads or writes an RPC's connection
	raddr    net.Addr
}

func (c *rpcConn) RemoteAddr() net.Addr { return c.raddr }
func (c *rpcConn) LocalAddr() net.Addr  { return noAddr }

// noAddr is an RPC's local address, as fasthttp's Init gives it.
var noAddr = &net.TCPAddr{IP: net.IPv4zero}

// exchangeLog is where fasthttp would log for an exchange's ctx: the
// standard error, as its RequestCtx.Init does.
var exchangeLog fasthttp.Logger = log.New(os.Stderr, "", log.LstdFlags)

var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// newExchange builds the request for method on path, carrying ctx's API
// key, request id and deadline. An RPC whose deadline has already passed
// gets DEADLINE_EXCEEDED here, before anything is sent. The caller
// releases it once done with its answer's header.
func newExchange(ctx context.Context, method, path string) (*exchange, error) {
	var addr net.Addr = noAddr
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		addr = p.Addr
	}
	var deadline string
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			return nil, status.Error(codes.DeadlineExceeded, "the RPC's deadline passed before it was sent to a worker")
		}
		deadline = strconv.FormatInt(int64(left), 10) + "ns"
	}
	x := exchanges.Get().(*exchange)
	x.conn.raddr = addr
	x.ctx.Init2(&x.conn, exchangeLog, true)
	h := &x.ctx.Request.Header
	h.SetMethod(method)
	h.SetRequestURI(path)
	h.SetHost("grpc")
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		setForwarded(h, md)
	}
	if deadline != "" {
		h.Set(timeoutHeader, deadline)
	}
	return x, nil
}

// release hands x back to the pool. The answer's body leaves with its
// reader (an infer answer's outputs alias it until gRPC has sent them):
// the pooled Response keeps its header table, never those bytes. Slices
// of the answer's header (Peek) are dead from here. An exchange whose
// ctx was hijacked (the lb's answer to a client gone) is not reused: the
// hijack cannot be undone.
func (x *exchange) release() {
	x.charge.Release()
	x.charge = nil
	if x.ctx.Hijacked() {
		return
	}
	x.ctx.Response.SwapBody(nil)
	x.ctx.Request.Reset()
	x.ctx.Response.Reset()
	x.ctx.ResetUserValues()
	x.conn.raddr = nil
	exchanges.Put(x)
}

// setBody sets the binary-extension body: a JSON header of headerLen
// bytes, then the tensors' bytes.
func (x *exchange) setBody(body []byte, headerLen int) {
	x.ctx.Request.Header.SetContentType("application/octet-stream")
	x.ctx.Request.Header.Set(headerLenHeader, strconv.Itoa(headerLen))
	x.ctx.Request.SetBodyRaw(body)
	x.ctx.Request.Header.SetContentLength(len(body))
}

// do hands the request to h and returns the answer's status and body, or
// the gRPC error an answer other than 200 maps to (see Code).
//
// The answer's X-Request-Id (the client's x-request-id, or the lb's new
// one) is sent back as the x-request-id header metadata of a unary RPC,
// so a client can find its request in the master's and workers' logs.
func (x *exchange) do(ctx context.Context, h Handler) (int, []byte, error) {
	h(ctx, &x.ctx)
	if c, ok := x.ctx.UserValue(AnswerChargeKey).(*budget.Charge); ok {
		x.ctx.RemoveUserValue(AnswerChargeKey)
		x.charge = c
	}
	resp := &x.ctx.Response
	if id := resp.Header.Peek(requestIDHeader); len(id) > 0 {
		// Refused for a stream once its header is sent: the first
		// request's id is the stream's.
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-request-id", string(id)))
	}
	code := resp.StatusCode()
	if code == fasthttp.StatusOK {
		return code, resp.Body(), nil
	}
	retry := len(resp.Header.Peek(fasthttp.HeaderRetryAfter)) > 0
	return code, resp.Body(), status.Error(Code(code, retry, ctx.Err()), errorMessage(code, resp.Body()))
}

// modelPath is /v2/models/{name}[/versions/{version}], both escaped. A
// name or version that would not stay one path segment once the master
// decodes and cleans the path ("a/../b", "..") names no model: NOT_FOUND,
// rather than the route it would turn into.
func modelPath(name, version string) (string, error) {
	for _, seg := range []string{name, version} {
		if strings.Contains(seg, "/") || seg == "." || seg == ".." {
			return "", status.Errorf(codes.NotFound, "unknown model %q version %q: names and versions have no '/'", name, version)
		}
	}
	p := "/v2/models/" + url.PathEscape(name)
	if version != "" {
		p += "/versions/" + url.PathEscape(version)
	}
	return p, nil
}

// answerCharge takes the answer's charge the Handler left (nil: none):
// the caller gives it back, or hands it on.
func (x *exchange) answerCharge() *budget.Charge {
	c := x.charge
	x.charge = nil
	return c
}
