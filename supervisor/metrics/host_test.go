package metrics

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/status"
)

func TestMetricsHosts(t *testing.T) {
	hs := newMetricsHosts(config.MetricsConfig{Listen: "10.0.0.5:8002", AllowedHosts: []string{"GPU-7.example.com"}})
	for host, want := range map[string]bool{
		"localhost:8002": true, "127.0.0.1:8002": true, "[::1]:8002": true, "LOCALHOST": true,
		"10.0.0.5:8002": true, "gpu-7.example.com:8002": true, "gpu-7.example.com": true,
		"evil.example:8002": false, "": false, "127.0.0.1.evil.example": false, "10.0.0.6:8002": false,
	} {
		if got := hs.allows([]byte(host)); got != want {
			t.Errorf("Host %q allowed = %v, want %v", host, got, want)
		}
	}
	if newMetricsHosts(config.MetricsConfig{Listen: "0.0.0.0:8002"}).allows([]byte("0.0.0.0:8002")) {
		t.Error("an unspecified listen address must not make 0.0.0.0 an allowed Host")
	}
}

// TestMetricsRefusesForeignHost: a request naming another host (a DNS
// rebinding page) gets 403 before any route is served.
func TestMetricsRefusesForeignHost(t *testing.T) {
	ms := New(nil, fakeMaster{config.DefaultConfig().Metrics}, nil, zerolog.Nop())
	for host, want := range map[string]int{"attacker.example:8002": 403, "127.0.0.1:8002": 404} {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/no-such-page")
		ctx.Request.Header.SetHost(host)
		ms.handle(&ctx)
		if got := ctx.Response.StatusCode(); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
		if want == 403 && !strings.Contains(string(ctx.Response.Body()), `"error"`) {
			t.Errorf("403 body %q is not a V2 error", ctx.Response.Body())
		}
	}
}

// fakeMaster is a master with a metrics config and nothing else.
type fakeMaster struct{ c config.MetricsConfig }

func (f fakeMaster) Config() config.MetricsConfig             { return f.c }
func (f fakeMaster) Status() control.Status                   { return control.Status{} }
func (f fakeMaster) Scrape([]affinity.GPUUsage) status.Scrape { return status.Scrape{} }
