package supervisor

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

func TestGRPCNeedsAnUpgrade(t *testing.T) {
	for name, change := range map[string]func(*config.Config){
		"listen":  func(c *config.Config) { c.GRPC.Listen = "127.0.0.1:9101" },
		"off":     func(c *config.Config) { c.GRPC.Listen = "" },
		"streams": func(c *config.Config) { c.GRPC.MaxConcurrentStreams = 7 },
		"conns":   func(c *config.Config) { c.GRPC.MaxConnections = 7 },
		"rpcs":    func(c *config.Config) { c.GRPC.MaxRPCs = 7 },
	} {
		cfg := config.DefaultConfig()
		change(cfg)
		if err := reloadable(config.DefaultConfig(), cfg); err == nil || !strings.Contains(err.Error(), "grpc:") {
			t.Errorf("%s: reloadable = %v, want a grpc error", name, err)
		}
	}
}

// admitMessage settles what an inference RPC's header can: readiness, the
// key (without its rate) and max_in_flight as it stands; it holds nothing.
func TestAdmitMessage(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Limits.MaxInFlight = 1
	cfg.Auth.APIKeys = []string{"0123456789abcdef-key"}
	cfg.Auth.RateLimit, cfg.Auth.RateBurst = 1, 1
	m := New(cfg, zerolog.Nop(), Options{})
	keys, err := loadAPIKeys(cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	m.keys.Store(keys)
	header := func(key string) *fasthttp.RequestHeader {
		var h fasthttp.RequestHeader
		if key != "" {
			h.Set("X-API-Key", key)
		}
		return &h
	}
	if code, _, _ := m.admitMessage(header("0123456789abcdef-key")); code != fasthttp.StatusServiceUnavailable {
		t.Errorf("not serving: %d, want 503", code)
	}
	m.serving.Store(true)
	for key, want := range map[string]int{"": 401, "wrong-key-0123456789": 401, "0123456789abcdef-key": 200} {
		if code, msg, _ := m.admitMessage(header(key)); code != want || (want != 200 && msg == "") {
			t.Errorf("key %q: %d %q, want %d", key, code, msg, want)
		}
	}
	// admitMessage took nothing from the key's rate (1/s, burst 1): it
	// passed the key twice, and verify's first call still passes.
	if code, _, _ := m.admitMessage(header("0123456789abcdef-key")); code != 200 {
		t.Errorf("second admission: %d", code)
	}
	if r := keys.verify(header("0123456789abcdef-key"), "/v2/models/m/infer"); r.status != 0 {
		t.Errorf("the rate was taken by admitMessage: %+v", r)
	}
	m.inFlight.Store(1)
	if code, _, retry := m.admitMessage(header("0123456789abcdef-key")); code != 503 || !retry {
		t.Errorf("at max_in_flight: %d retry %v, want 503 with Retry-After", code, retry)
	}
	if m.inFlight.Load() != 1 {
		t.Errorf("admitMessage changed in-flight to %d", m.inFlight.Load())
	}
}
