package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
)

// Version is the supervisor's version, reported by /v2 and `supervisor
// version`. Set at build time with -ldflags "-X ...supervisor.Version=...".
var Version = "dev"

// newFrontServer builds the public fasthttp server: health and server
// metadata are answered here; everything under /v2/models/ goes through
// the lb to a prep worker.
func (m *Master) newFrontServer() *fasthttp.Server {
	l := m.cfg().Limits
	return &fasthttp.Server{
		Handler:      m.serveFront,
		ErrorHandler: m.frontTransportError,
		Name:         "supervisor",
		// The header block must fit the read buffer: larger gets 431.
		ReadBufferSize:     int(l.MaxHeaderBytes),
		MaxRequestBodySize: int(m.cfg().MaxBodyBytes),
		// Per request, so that a reload's body limit and timeouts apply
		// at once (the header read stays bound by the first ReadTimeout).
		// A timeout is passed only once a reload changed it: each one
		// re-arms a deadline, on every request.
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			c := m.cfg()
			rc := fasthttp.RequestConfig{MaxRequestBodySize: int(c.MaxBodyBytes)}
			if c.Limits.ReadTimeout != l.ReadTimeout {
				rc.ReadTimeout = c.Limits.ReadTimeout.Duration
			}
			if c.Limits.WriteTimeout != l.WriteTimeout {
				rc.WriteTimeout = c.Limits.WriteTimeout.Duration
			}
			return rc
		},
		ReadTimeout:     l.ReadTimeout.Duration,
		WriteTimeout:    l.WriteTimeout.Duration,
		IdleTimeout:     l.IdleTimeout.Duration,
		Concurrency:     l.MaxConnections,
		CloseOnShutdown: true,
		Logger:          fasthttpLogger{m},
	}
}

func (m *Master) serveFront(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	if m.keys.Load().check(m, ctx) {
		m.route(ctx)
	} else {
		m.proxy.SetRequestID(ctx)
	}
	m.logRequest(ctx, time.Since(start))
	if m.draining.Load() {
		// Keep-alive clients reconnect: to the new master after an
		// upgrade, or to a closed port after a stop.
		ctx.SetConnectionClose()
	}
}

// admit counts a request against max_in_flight; false (answered 503 with
// Retry-After) when the listener is at its cap. A true answer must be
// paired with a release.
func (m *Master) admit(ctx *fasthttp.RequestCtx) bool {
	limit := int64(m.cfg().Limits.MaxInFlight)
	if n := m.inFlight.Add(1); limit > 0 && n > limit {
		m.inFlight.Add(-1)
		ctx.Response.Header.Set("Retry-After", "1")
		m.reply(ctx, fasthttp.StatusServiceUnavailable, fmt.Sprintf("server busy: %d requests in flight (limits.max_in_flight); retry later", limit))
		return false
	}
	return true
}

func (m *Master) route(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	if strings.HasPrefix(path, "/v2/models/") {
		if !m.serving.Load() {
			m.reply(ctx, fasthttp.StatusServiceUnavailable, "the server is not ready: workers are starting or stopping")
			return
		}
		deadline, err := clientDeadline(ctx)
		if err != nil {
			m.reply(ctx, fasthttp.StatusBadRequest, err.Error())
			m.proxy.SetRequestID(ctx)
			return
		}
		if m.admit(ctx) {
			m.proxy.ServeHTTPUntil(ctx, deadline)
			m.inFlight.Add(-1)
		}
		return
	}
	switch path {
	case "/v2/health/live":
		m.reply(ctx, fasthttp.StatusOK, "")
	case "/v2/health/ready":
		m.health(ctx)
	case "/v2":
		ctx.SetContentType("application/json")
		ctx.SetBody(v2.AppendServerMetadata(nil, "supervisor", Version))
	default:
		m.reply(ctx, fasthttp.StatusNotFound, "no route for "+path)
	}
	m.proxy.SetRequestID(ctx)
}

// health answers /v2/health/ready: 200 while every pool has a serving
// worker (and, with strict_readiness, every model serves), 503 otherwise. Slots whose boots keep failing are listed in the
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
	if !ready {
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

// frontTransportError answers what fasthttp rejects before any handler
// runs: bodies over max_body_bytes (413) and unparsable requests (400).
func (m *Master) frontTransportError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		m.reply(ctx, fasthttp.StatusRequestEntityTooLarge, "request body is larger than max_body_bytes")
	case errors.As(err, &small):
		m.reply(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "request header is larger than limits.max_header_bytes")
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
