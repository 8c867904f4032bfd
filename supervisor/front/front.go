package front

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
	"github.com/supervisor-dev/supervisor/worker"
)

// Server builds the public fasthttp server: health and server
// metadata are answered here; everything under /v2/models/ goes through
// the lb to a prep worker. Every request is decided from its header
// (headerReceived, admission.go) before its body is read, and bodies are
// streamed into buffers of the master's own (bodyread.go), never into
// fasthttp's pools.
func (f *Front) Server() *fasthttp.Server {
	l := f.cfg().Limits
	return &fasthttp.Server{
		Handler:      f.serveFront,
		ErrorHandler: f.frontTransportError,
		Name:         "supervisor",
		// The header block must fit the read buffer: larger gets 431.
		ReadBufferSize: int(l.MaxHeaderBytes),
		// The handler runs once the header is in; the body is read by
		// receiveBody, under the body budget and timeout. Multipart
		// bodies are not parsed (fasthttp would read them whole, to
		// memory or temporary files, before the handler runs).
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		MaxRequestBodySize:           int(f.cfg().MaxBodyBytes),
		HeaderReceived:               f.headerReceived,
		// ReadTimeout bounds the header (and the wait for a connection's
		// first request); body_timeout and body_min_rate bound the body.
		ReadTimeout:  l.ReadTimeout.Duration,
		WriteTimeout: l.WriteTimeout.Duration,
		IdleTimeout:  l.IdleTimeout.Duration,
		// The listener caps connections at max_connections with a V2
		// answer (conncap.go); fasthttp's own text/plain cap sits above
		// it, for the moment between a close and fasthttp's release.
		Concurrency:     2 * l.MaxConnections,
		CloseOnShutdown: true,
		Logger:          Logger(f.log),
		// An idle connection (or one that has not sent its first byte)
		// holds no read or write buffer: 10k idle connections cost their
		// goroutines, not 10k x max_header_bytes.
		ReduceMemoryUsage: true,
		ConnState:         f.connState,
	}
}

func (f *Front) serveFront(ctx *fasthttp.RequestCtx) {
	defer f.recoverHandler(ctx)
	start := time.Now()
	c := f.cfg()
	v := f.admissions.take(&ctx.Request.Header)
	if v == nil { // not through the server's hook (tests call the handler directly)
		v = f.decide(c, &ctx.Request.Header)
	}
	defer f.finish(v)
	switch {
	case v.Status != 0:
		f.refuse(ctx, v.Refusal, v.hasBody)
	case v.proxied:
		// Only the master asks for prefix checks (precheck.go).
		ctx.Request.Header.Del(worker.PrefixHeader)
		if err := f.receiveBody(ctx, c, v); err != nil {
			f.refuse(ctx, bodyRefusal(err), true)
			break
		}
		f.forwardInfer(ctx, c, v, clientGone(ctx), f.answerGate(v))
		// The answer is charged from its header to its write
		// (answerbudget.go); the deferred finish gives back nothing more.
		f.holdAnswer(ctx, v)
	default:
		f.serveLocal(ctx)
	}
	f.logRequest(ctx, time.Since(start))
	if f.draining.Load() {
		// Keep-alive clients reconnect: to the new master after an
		// upgrade, or to a closed port after a stop.
		ctx.SetConnectionClose()
	}
}

// refuse answers a request the master will not serve. When the client
// sent (or declared) a body that was not read, the connection is closed
// after the answer: what is left of the body cannot be told apart from
// the next request. It is a lingering close (linger.go), so that a client
// still sending reads the answer rather than a reset.
func (f *Front) refuse(ctx *fasthttp.RequestCtx, r admission.Refusal, unreadBody bool) {
	if r.Header != "" {
		ctx.Response.Header.Set(r.Header, r.Value)
	}
	f.reply(ctx, r.Status, r.Msg)
	f.proxy.SetRequestID(ctx)
	if unreadBody {
		ctx.SetConnectionClose()
		lingerOnClose(ctx.Conn())
	}
}

// serveLocal answers the routes the master serves itself.
func (f *Front) serveLocal(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/v2/health/live":
		f.reply(ctx, fasthttp.StatusOK, "")
	case "/v2/health/ready":
		f.health(ctx)
	case "/v2":
		ctx.SetContentType("application/json")
		ctx.SetBody(v2.AppendServerMetadata(nil, "supervisor", f.opts.Version, f.extensions()...))
	case LoggingPath:
		f.serveLogging(ctx) // admitted by decideLogging
	default:
		if strings.HasPrefix(string(ctx.Path()), RepositoryPrefix) {
			f.serveRepository(ctx) // admitted by decideRepository
			break
		}
		if model, ok := tracePath(string(ctx.Path())); ok {
			f.serveTrace(ctx, model) // admitted by decideTrace
			break
		}
		if strings.HasPrefix(string(ctx.Path()), sysshm.Prefix+"/") {
			f.serveSharedMemory(ctx) // admitted by decideSharedMemory
			break
		}
		f.reply(ctx, fasthttp.StatusNotFound, "no route for "+string(ctx.Path()))
	}
	f.proxy.SetRequestID(ctx)
}

// health answers /v2/health/ready: 200 while the master is ready
// (Backend.Readiness), 503 otherwise. Positions whose boots keep failing
// are listed in the body ({"degraded": [...]}) either way, so a probe log
// shows them.
func (f *Front) health(ctx *fasthttp.RequestCtx) {
	r := f.b.Readiness()
	status, msg, degraded := fasthttp.StatusOK, r.NotReady, r.Degraded
	if msg != "" {
		status = fasthttp.StatusServiceUnavailable
	}
	if len(degraded) == 0 {
		f.reply(ctx, status, msg)
		return
	}
	body, _ := json.Marshal(struct {
		Error    string   `json:"error,omitempty"`
		Degraded []string `json:"degraded"`
	}{msg, degraded})
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// reply answers a locally handled route: an empty 200, or a V2 error.
func (f *Front) reply(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.SetStatusCode(status)
	if msg != "" {
		ctx.SetContentType("application/json")
		ctx.SetBody(v2.AppendError(nil, msg))
	}
}

// frontTransportError answers what fails before the handler runs:
// unparsable requests (400), a header over limits.max_header_bytes (431),
// a header or the first bytes of a body not received in time (408). A
// verdict the header hook left for this request is finished here.
func (f *Front) frontTransportError(ctx *fasthttp.RequestCtx, err error) {
	if v := f.admissions.take(&ctx.Request.Header); v != nil {
		f.finish(v)
	}
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		f.reply(ctx, fasthttp.StatusRequestEntityTooLarge, "request body is larger than max_body_bytes")
	case errors.As(err, &small):
		f.reply(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "request header is larger than limits.max_header_bytes")
	case isTimeoutErr(err):
		f.reply(ctx, fasthttp.StatusRequestTimeout, "request not received in time (limits.read_timeout for the header, limits.body_timeout for the body)")
	default:
		f.reply(ctx, fasthttp.StatusBadRequest, "malformed HTTP request: "+err.Error())
	}
	f.proxy.SetRequestID(ctx)
}

// Logger routes fasthttp's own messages into log, at warn.
func Logger(log zerolog.Logger) fasthttp.Logger { return fasthttpLogger{log} }

type fasthttpLogger struct{ log zerolog.Logger }

// Printf logs at warn, but a failed TLS handshake (a plain-HTTP client
// or a scanner on the TLS port, a client refusing the certificate) at
// debug: one line per such connection would let any client flood the log.
func (l fasthttpLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.Contains(msg, "tls: ") {
		l.log.Debug().Msg(msg)
		return
	}
	l.log.Warn().Msg(msg)
}
