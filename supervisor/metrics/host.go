package metrics

import (
	"net"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The metrics listener answers only requests that name it by a Host it
// serves: a loopback name, the host of metrics.listen, or one listed in
// metrics.allowed_hosts. A web page in a browser on the host can make the
// browser send requests to 127.0.0.1:8002 under its own name (DNS
// rebinding); their Host header is that name, so they get 403 and the
// page never reads /status.json or /metrics.

// loopbackHosts are always allowed: every way to name this host locally.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// metricsHosts is the set of Host names (ports stripped, lowercase) the
// metrics listener answers.
type metricsHosts map[string]bool

func newMetricsHosts(c config.MetricsConfig) metricsHosts {
	hs := metricsHosts{}
	for _, h := range loopbackHosts {
		hs[h] = true
	}
	if host, _, err := net.SplitHostPort(c.Listen); err == nil {
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			hs[strings.ToLower(host)] = true
		}
	}
	for _, h := range c.AllowedHosts {
		hs[strings.ToLower(hostOnly(h))] = true
	}
	return hs
}

// allows reports whether a request's Host header names this listener.
func (hs metricsHosts) allows(host []byte) bool {
	return hs[strings.ToLower(hostOnly(string(host)))]
}

// hostOnly strips the port and the brackets of an IPv6 literal.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// refuseHost answers a request for a Host the listener does not serve.
func refuseHost(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(fasthttp.StatusForbidden)
	ctx.SetContentType("application/json")
	ctx.SetBody([]byte(`{"error":"the metrics listener answers only its own host names (loopback, metrics.listen's host, metrics.allowed_hosts)"}`))
	ctx.SetConnectionClose()
}
