package admission

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// AdmitMessage settles what an inference RPC's header can: readiness, the
// key (without its rate) and max_in_flight as it stands; it holds nothing.
func TestAdmitMessage(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Limits.MaxInFlight = 1
	cfg.Auth.APIKeys = []string{"0123456789abcdef-key"}
	cfg.Auth.RateLimit, cfg.Auth.RateBurst = 1, 1
	m := New(func() *config.Config { return cfg }, zerolog.Nop())
	keys, err := LoadKeys(cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	m.SetKeys(keys)
	header := func(key string) *fasthttp.RequestHeader {
		var h fasthttp.RequestHeader
		if key != "" {
			h.Set("X-API-Key", key)
		}
		return &h
	}
	if code, _, _ := m.AdmitMessage(header("0123456789abcdef-key")); code != fasthttp.StatusServiceUnavailable {
		t.Errorf("not serving: %d, want 503", code)
	}
	m.SetServing(true)
	for key, want := range map[string]int{"": 401, "wrong-key-0123456789": 401, "0123456789abcdef-key": 200} {
		if code, msg, _ := m.AdmitMessage(header(key)); code != want || (want != 200 && msg == "") {
			t.Errorf("key %q: %d %q, want %d", key, code, msg, want)
		}
	}
	// AdmitMessage took nothing from the key's rate (1/s, burst 1): it
	// passed the key twice, and Verify's first call still passes.
	if code, _, _ := m.AdmitMessage(header("0123456789abcdef-key")); code != 200 {
		t.Errorf("second admission: %d", code)
	}
	if r := keys.Verify(header("0123456789abcdef-key"), "/v2/models/m/infer"); r.Status != 0 {
		t.Errorf("the rate was taken by AdmitMessage: %+v", r)
	}
	m.inFlight.Store(1)
	if code, _, retry := m.AdmitMessage(header("0123456789abcdef-key")); code != 503 || !retry {
		t.Errorf("at max_in_flight: %d retry %v, want 503 with Retry-After", code, retry)
	}
	if m.inFlight.Load() != 1 {
		t.Errorf("AdmitMessage changed in-flight to %d", m.inFlight.Load())
	}
}

// ReserveBody charges a gRPC message to the body budget an HTTP body
// uses, held to the seven eighths large bodies may use; its charge's
// Release gives it back; a reload's limit is the budget's at its next
// use.
func TestReserveBody(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.MaxBodyBytes = 8 << 20
	cfg.Limits.MaxBodyBytesInFlight = 16 << 20
	m := New(func() *config.Config { return cfg }, zerolog.Nop())
	first, err := m.ReserveBody(8 << 20)
	if err != nil || m.Bodies().InUse() != 8<<20 {
		t.Fatalf("the first message: %v, in use %d, want %d", err, m.Bodies().InUse(), 8<<20)
	}
	if _, err := m.ReserveBody(8 << 20); err == nil {
		t.Fatal("a second 8 MiB message passed seven eighths of a 16 MiB budget")
	}
	small, err := m.ReserveBody(1 << 20)
	if err != nil {
		t.Fatalf("a 1 MiB message did not get the eighth kept for small bodies: %v", err)
	}
	first.Release()
	small.Release()
	if m.Bodies().InUse() != 0 {
		t.Fatalf("in use %d after release, want 0", m.Bodies().InUse())
	}
	cfg2 := *cfg
	cfg2.Limits.MaxBodyBytesInFlight = 32 << 20
	cfg = &cfg2
	c, err := m.ReserveBody(16 << 20)
	if err != nil {
		t.Fatalf("16 MiB after the limit was raised to 32 MiB: %v", err)
	}
	c.Release()
}
