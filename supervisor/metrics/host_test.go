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
		"evil.example:8002": false, "": false, "127.0.0.1.evil.example": false, "10.0.0.6:8002": true, "gpu-8.example.com": false,
	} {
		if got := hs.allows([]byte(host)); got != want {
			t.Errorf("Host %q allowed = %v, want %v", host, got, want)
		}
	}
}

// TestMetricsHostsIPLiterals: listening on every address (0.0.0.0 or
// [::], as deploy/k8s and deploy/prometheus have it), a scrape addressed to
// the pod's or host's IP is answered, whatever the IP and however it is
// written (v4, v6 bracketed, with or without a port); a name not allowed
// still gets 403. DNS rebinding needs a name: an IP literal cannot be
// rebound (host.go).
func TestMetricsHostsIPLiterals(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:8002", "[::]:8002", "127.0.0.1:8002"} {
		hs := newMetricsHosts(config.MetricsConfig{Listen: listen})
		for host, want := range map[string]bool{
			"10.1.2.3:8002": true, "10.1.2.3": true, "192.168.0.7:9999": true, "0.0.0.0:8002": true,
			"[fd00::1:2]:8002": true, "[fd00::1:2]": true, "fd00::1:2": true, "[2001:db8::7]:80": true,
			"[fe80::1%25eth0]:8002": true, "[::ffff:10.1.2.3]:8002": true,
			"pod-7.supervisor.svc:8002": false, "evil.example": false, "10.1.2.3.nip.io:8002": false,
			"10.1.2:8002": false, "0x0a010203:8002": false, "[evil.example]:8002": false, "": false,
		} {
			if got := hs.allows([]byte(host)); got != want {
				t.Errorf("listen %s: Host %q allowed = %v, want %v", listen, host, got, want)
			}
		}
	}
}

// TestMetricsRefusesForeignHost: a request naming another host (a DNS
// rebinding page) gets 403 before any route is served; one addressed to
// an IP reaches the routes.
func TestMetricsRefusesForeignHost(t *testing.T) {
	ms := New(nil, fakeMaster{config.MetricsConfig{Listen: "0.0.0.0:8002"}}, nil, zerolog.Nop())
	for host, want := range map[string]int{"attacker.example:8002": 403, "127.0.0.1:8002": 404, "10.1.2.3:8002": 404, "[fd00::7]:8002": 404} {
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
