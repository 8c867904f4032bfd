package prep

import (
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/worker"
)

// newServer is the prep worker's HTTP server, serving handler: bodies up
// to spec.MaxBodyBytes, header blocks up to what the master admits and
// adds (readBufferSize), and no buffer held by an idle connection. The
// master's pool keeps up to 512 connections to each prep worker (lb's
// MaxConnsPerBackend) open while idle (lb.IdleConnTimeout); with
// fasthttp's default each held its read buffer (max_header_bytes + 4 KiB,
// up to 1 MiB) and its last request and answer bodies: about 0.5 GiB a
// worker at limits.max_header_bytes: 1MiB (TestIdleConnectionsHoldNoBuffers).
func newServer(spec *worker.Spec, handler fasthttp.RequestHandler, transportError func(*fasthttp.RequestCtx, error), logger fasthttp.Logger) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:            handler,
		Name:               "supervisor-prep",
		MaxRequestBodySize: int(spec.MaxBodyBytes),
		ReadBufferSize:     readBufferSize(spec.MaxHeaderBytes),
		ReduceMemoryUsage:  true,
		ErrorHandler:       transportError,
		Logger:             logger,
	}
}

// forwardedHeaderRoom is what the master adds to a client's header block
// when it forwards a request (the request id, the prefix check's header).
const forwardedHeaderRoom = 4 << 10

// readBufferSize is the server's read buffer, which bounds a request's
// header block: every header the master admitted (limits.max_header_bytes)
// and what it adds. With fasthttp's default (4 KiB) a client's 5 KiB of
// headers (a long bearer token, cookies), admitted by the master, were
// answered 400 "small read buffer" here. 0 (no max_header_bytes given):
// fasthttp's default.
func readBufferSize(maxHeaderBytes int64) int {
	if maxHeaderBytes <= 0 {
		return 0
	}
	return int(maxHeaderBytes) + forwardedHeaderRoom
}
