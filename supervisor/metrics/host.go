package metrics

import (
	"net"
	"net/netip"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The metrics listener answers only requests that name it by a Host it
// serves: an IP literal, a loopback name, the host of metrics.listen, or
// one listed in metrics.allowed_hosts. A web page in a browser on the host
// can make the browser send requests to 127.0.0.1:8002 under its own name
// (DNS rebinding); their Host header is that name, so they get 403 and the
// page never reads /status.json or /metrics.
//
// Every IP literal passes, whatever the listen address: a rebinding
// attack needs a name whose address the attacker changes, and an IP
// literal resolves to nothing else. A page whose origin is an IP
// (http://10.0.0.5:8002) is that listener's own; a page of any other
// origin may send a request with Host 10.0.0.5:8002 but the browser's
// same-origin policy keeps it from reading the answer. Refusing IPs would
// only refuse Prometheus: listening on 0.0.0.0 (deploy/k8s,
// deploy/prometheus), it scrapes the pod's or host's IP.

// loopbackHosts are always allowed: every way to name this host locally.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// metricsHosts is the set of Host names (ports stripped, lowercase) the
// metrics listener answers besides IP literals.
type metricsHosts map[string]bool

func newMetricsHosts(c config.MetricsConfig) metricsHosts {
	hs := metricsHosts{}
	for _, h := range loopbackHosts {
		hs[h] = true
	}
	if host, _, err := net.SplitHostPort(c.Listen); err == nil && host != "" {
		hs[strings.ToLower(host)] = true // a name; an IP passes anyway (allows)
	}
	for _, h := range c.AllowedHosts {
		hs[strings.ToLower(hostOnly(h))] = true
	}
	return hs
}

// allows reports whether a request's Host header names this listener:
// an IP literal (v4, or v6 with or without brackets and a zone), or a
// name in hs.
func (hs metricsHosts) allows(host []byte) bool {
	h := hostOnly(string(host))
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	return hs[strings.ToLower(h)]
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
	ctx.SetBody([]byte(`{"error":"the metrics listener answers only an IP address or its own host names (loopback, metrics.listen's host, metrics.allowed_hosts)"}`))
	ctx.SetConnectionClose()
}
