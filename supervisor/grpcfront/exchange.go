package grpcfront

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
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

// exchange is one RPC's HTTP request and the answer to it.
type exchange struct {
	ctx fasthttp.RequestCtx
}

// newExchange builds the request for method on path, carrying ctx's API
// key, request id and deadline. An RPC whose deadline has already passed
// gets DEADLINE_EXCEEDED here, before anything is sent.
func newExchange(ctx context.Context, method, path string) (*exchange, error) {
	var addr net.Addr
	if p, ok := peer.FromContext(ctx); ok {
		addr = p.Addr
	}
	x := &exchange{}
	x.ctx.Init(&fasthttp.Request{}, addr, nil)
	h := &x.ctx.Request.Header
	h.SetMethod(method)
	h.SetRequestURI(path)
	h.SetHost("grpc")
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		setForwarded(h, md)
	}
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			return nil, status.Error(codes.DeadlineExceeded, "the RPC's deadline passed before it was sent to a worker")
		}
		h.Set(timeoutHeader, strconv.FormatInt(int64(left), 10)+"ns")
	}
	return x, nil
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
