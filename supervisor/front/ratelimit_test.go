package front

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

const (
	rateKey      = "rate-limit-key-0123456789"
	otherRateKey = "rate-limit-key-abcdefghij"
)

// keyHeader is a request header presenting key.
func keyHeader(key string) *fasthttp.RequestHeader {
	var h fasthttp.RequestHeader
	h.Set("X-API-Key", key)
	return &h
}

// spend takes requests of key from f's keys until one is refused 429,
// failing t when none is within max requests.
func spend(t *testing.T, f *Front, key string, max int) {
	t.Helper()
	for range max {
		if r := f.keys.Load().verify(keyHeader(key), "/v2/models/m/infer"); r.status == fasthttp.StatusTooManyRequests {
			return
		} else if r.status != 0 {
			t.Fatalf("key refused %d %s, want 200 or 429", r.status, r.msg)
		}
	}
	t.Fatalf("%d requests of a key limited to 1/s passed", max)
}

// reload puts the keys of auth in force, as the master's reload does.
func reload(t *testing.T, f *Front, auth config.AuthConfig) {
	t.Helper()
	keys, err := LoadKeys(auth)
	if err != nil {
		t.Fatal(err)
	}
	f.SetKeys(keys)
}

// TestRateLimitOutlivesReload: a key's bucket spent before a reload is
// still spent after it (a reload, or a repository load, used to refill
// every key's bucket); a key whose burst changed starts afresh at the new
// burst; a key listed twice has one bucket.
func TestRateLimitOutlivesReload(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Auth.APIKeys = []string{rateKey, otherRateKey, rateKey}
	cfg.Auth.RateLimit, cfg.Auth.RateBurst = 1, 3
	f, _, _ := newTestFront(cfg)
	reload(t, f, cfg.Auth)
	if n := len(f.keys.Load().keys); n != 2 {
		t.Fatalf("%d keys in force for two listed (one twice), want 2", n)
	}
	spend(t, f, rateKey, 20)
	for i := range 3 {
		reload(t, f, cfg.Auth) // the same settings, as a repository load's reload
		if r := f.keys.Load().verify(keyHeader(rateKey), "/v2/models/m/infer"); r.status != fasthttp.StatusTooManyRequests {
			t.Fatalf("reload %d refilled the spent bucket: %d, want 429", i, r.status)
		}
	}
	if r := f.keys.Load().verify(keyHeader(otherRateKey), "/v2/models/m/infer"); r.status != 0 {
		t.Fatalf("another key shares the spent bucket: %d", r.status)
	}
	// A new burst is a new bucket, full at the new burst.
	cfg.Auth.RateBurst = 5
	reload(t, f, cfg.Auth)
	for i := range 5 {
		if r := f.keys.Load().verify(keyHeader(rateKey), "/v2/models/m/infer"); r.status != 0 {
			t.Fatalf("request %d after the burst changed to 5: %d, want 200", i, r.status)
		}
	}
	// Dropped and listed again: a fresh bucket (nothing kept for a key
	// that is no longer accepted).
	spend(t, f, rateKey, 20)
	cfg.Auth.APIKeys = []string{otherRateKey}
	reload(t, f, cfg.Auth)
	cfg.Auth.APIKeys = []string{otherRateKey, rateKey}
	reload(t, f, cfg.Auth)
	if r := f.keys.Load().verify(keyHeader(rateKey), "/v2/models/m/infer"); r.status != 0 {
		t.Fatalf("a key listed again after it was dropped: %d, want a fresh bucket", r.status)
	}
	if n := len(f.keys.Load().keys); n != 2 {
		t.Fatalf("%d keys in force, want 2", n)
	}
}
