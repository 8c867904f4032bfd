package supervisor

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// Version is the supervisor's version, reported by /v2 and `supervisor
// version`. Set at build time with -ldflags "-X ...supervisor.Version=...".
var Version = "dev"

// newFrontServer builds the public fasthttp server: health and server
// metadata are answered here; everything under /v2/models/ goes through
// the lb to a prep worker. Every request is decided from its header
// (headerReceived, admission.go) before its body is read, and bodies are
// streamed into buffers of the master's own (bodyread.go), never into
// fasthttp's pools.
func (m *Master) newFrontServer() *fasthttp.Server {
	l := m.cfg().Limits
	return &fasthttp.Server{
		Handler:      m.serveFront,
		ErrorHandler: m.frontTransportError,
		Name:         "supervisor",
		// The header block must fit the read buffer: larger gets 431.
		ReadBufferSize: int(l.MaxHeaderBytes),
		// The handler runs once the header is in; the body is read by
		// receiveBody, under the body budget and timeout. Multipart
		// bodies are not parsed (fasthttp would read them whole, to
		// memory or temporary files, before the handler runs).
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		MaxRequestBodySize:           int(m.cfg().MaxBodyBytes),
		HeaderReceived:               m.headerReceived,
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
		Logger:          fasthttpLogger{m},
		// An idle connection (or one that has not sent its first byte)
		// holds no read or write buffer: 10k idle connections cost their
		// goroutines, not 10k x max_header_bytes.
		ReduceMemoryUsage: true,
		ConnState:         m.connState,
	}
}

func (m *Master) serveFront(ctx *fasthttp.RequestCtx) {
	defer m.recoverHandler(ctx)
	start := time.Now()
	c := m.cfg()
	v := m.admissions.take(&ctx.Request.Header)
	if v == nil { // not through the server's hook (tests call the handler directly)
		v = m.decide(c, &ctx.Request.Header)
	}
	defer m.finish(v)
	switch {
	case v.status != 0:
		m.refuse(ctx, v.refusal, v.hasBody)
	case v.proxied:
		// Only the master asks for prefix checks (precheck.go).
		ctx.Request.Header.Del(worker.PrefixHeader)
		if err := m.receiveBody(ctx, c, v); err != nil {
			m.refuse(ctx, bodyRefusal(err), true)
			break
		}
		m.proxy.ServeHTTPUntil(ctx, v.deadline)
	default:
		m.serveLocal(ctx)
	}
	m.logRequest(ctx, time.Since(start))
	if m.draining.Load() {
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
func (m *Master) refuse(ctx *fasthttp.RequestCtx, r refusal, unreadBody bool) {
	if r.header != "" {
		ctx.Response.Header.Set(r.header, r.value)
	}
	m.reply(ctx, r.status, r.msg)
	m.proxy.SetRequestID(ctx)
	if unreadBody {
		ctx.SetConnectionClose()
		lingerOnClose(ctx.Conn())
	}
}

// serveLocal answers the routes the master serves itself.
func (m *Master) serveLocal(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/v2/health/live":
		m.reply(ctx, fasthttp.StatusOK, "")
	case "/v2/health/ready":
		m.health(ctx)
	case "/v2":
		ctx.SetContentType("application/json")
		ctx.SetBody(v2.AppendServerMetadata(nil, "supervisor", Version))
	default:
		if strings.HasPrefix(string(ctx.Path()), repositoryPrefix) {
			m.serveRepository(ctx) // admitted by decideRepository
			break
		}
		m.reply(ctx, fasthttp.StatusNotFound, "no route for "+string(ctx.Path()))
	}
	m.proxy.SetRequestID(ctx)
}

// health answers /v2/health/ready: 200 while every pool has a serving
// worker (and, with strict_readiness, every model serves), 503 otherwise. Positions whose boots keep failing are listed in the
// body ({"degraded": [...]}) either way, so a probe log shows them.
func (m *Master) health(ctx *fasthttp.RequestCtx) {
	ready, degraded := m.ready.Load(), []string(nil)
	for _, p := range []*pool{m.infer, m.prep} {
		serving := false
		for _, s := range p.list() {
			serving = serving || s.serving() != nil
			if s.status().State == stateDegraded {
				degraded = append(degraded, s.name)
			}
		}
		ready = ready && serving
	}
	status, msg := fasthttp.StatusOK, ""
	if m.lameDucking.Load() {
		status, msg = fasthttp.StatusServiceUnavailable, "not ready: stopping (drain_grace); requests are still served until the drain"
	} else if !ready {
		status, msg = fasthttp.StatusServiceUnavailable, "not ready: a worker pool has no serving worker, or the master is starting or stopping"
	} else if stuck := m.arenasStuck(); stuck != "" {
		status, msg = fasthttp.StatusServiceUnavailable, stuck
	} else if m.cfg().StrictReadiness && !m.allModelsReady() {
		status, msg = fasthttp.StatusServiceUnavailable, "not ready (strict_readiness): a model is unavailable; see GET /v2/models/{m}/ready or supervisor status"
	}
	if len(degraded) == 0 {
		m.reply(ctx, status, msg)
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
func (m *Master) reply(ctx *fasthttp.RequestCtx, status int, msg string) {
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
func (m *Master) frontTransportError(ctx *fasthttp.RequestCtx, err error) {
	if v := m.admissions.take(&ctx.Request.Header); v != nil {
		m.finish(v)
	}
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		m.reply(ctx, fasthttp.StatusRequestEntityTooLarge, "request body is larger than max_body_bytes")
	case errors.As(err, &small):
		m.reply(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "request header is larger than limits.max_header_bytes")
	case isTimeoutErr(err):
		m.reply(ctx, fasthttp.StatusRequestTimeout, "request not received in time (limits.read_timeout for the header, limits.body_timeout for the body)")
	default:
		m.reply(ctx, fasthttp.StatusBadRequest, "malformed HTTP request: "+err.Error())
	}
	m.proxy.SetRequestID(ctx)
}

// fasthttpLogger routes fasthttp's own messages into the master's log.
type fasthttpLogger struct{ m *Master }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.m.log.Warn().Msgf(format, args...)
}
