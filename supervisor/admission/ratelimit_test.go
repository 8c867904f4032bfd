package admission

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/respredis/redistest"
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

// spend takes requests of key from f until one is refused 429,
// failing t when none is within max requests.
func spend(t *testing.T, f *Gate, key string, max int) {
	t.Helper()
	for range max {
		if r := f.keys.Load().Verify(keyHeader(key), "/v2/models/m/infer"); r.Status == fasthttp.StatusTooManyRequests {
			return
		} else if r.Status != 0 {
			t.Fatalf("key refused %d %s, want 200 or 429", r.Status, r.Msg)
		}
	}
	t.Fatalf("%d requests of a key limited to 1/s passed", max)
}

// reload puts the keys of auth in force, as the master's reload does.
func reload(t *testing.T, f *Gate, auth config.AuthConfig) {
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
	f := New(func() *config.Config { return cfg }, zerolog.Nop())
	reload(t, f, cfg.Auth)
	if n := len(f.keys.Load().keys); n != 2 {
		t.Fatalf("%d keys in force for two listed (one twice), want 2", n)
	}
	spend(t, f, rateKey, 20)
	for i := range 3 {
		reload(t, f, cfg.Auth) // the same settings, as a repository load's reload
		if r := f.keys.Load().Verify(keyHeader(rateKey), "/v2/models/m/infer"); r.Status != fasthttp.StatusTooManyRequests {
			t.Fatalf("reload %d refilled the spent bucket: %d, want 429", i, r.Status)
		}
	}
	if r := f.keys.Load().Verify(keyHeader(otherRateKey), "/v2/models/m/infer"); r.Status != 0 {
		t.Fatalf("another key shares the spent bucket: %d", r.Status)
	}
	// A new burst is a new bucket, full at the new burst.
	cfg.Auth.RateBurst = 5
	reload(t, f, cfg.Auth)
	for i := range 5 {
		if r := f.keys.Load().Verify(keyHeader(rateKey), "/v2/models/m/infer"); r.Status != 0 {
			t.Fatalf("request %d after the burst changed to 5: %d, want 200", i, r.Status)
		}
	}
	// Dropped and listed again: a fresh bucket (nothing kept for a key
	// that is no longer accepted).
	spend(t, f, rateKey, 20)
	cfg.Auth.APIKeys = []string{otherRateKey}
	reload(t, f, cfg.Auth)
	cfg.Auth.APIKeys = []string{otherRateKey, rateKey}
	reload(t, f, cfg.Auth)
	if r := f.keys.Load().Verify(keyHeader(rateKey), "/v2/models/m/infer"); r.Status != 0 {
		t.Fatalf("a key listed again after it was dropped: %d, want a fresh bucket", r.Status)
	}
	if n := len(f.keys.Load().keys); n != 2 {
		t.Fatalf("%d keys in force, want 2", n)
	}
}

// fleetGate is a Gate whose keys' buckets are in the Redis at url, as
// one host of a fleet. It waits seconds for Redis, not the 20ms a master
// does: on a machine loaded by other tests a decision could fall back.
func fleetGate(t *testing.T, auth config.AuthConfig) *Gate {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.Auth = auth
	f := New(func() *config.Config { return cfg }, zerolog.Nop())
	f.fleet.timeout = 5 * time.Second
	reload(t, f, auth)
	t.Cleanup(func() { f.SetKeys(nil) }) // closes its Redis connections
	return f
}

// TestRateLimitSharedByAFleet: two Gates (two hosts) with one
// auth.rate_limit_redis share one bucket per key: together they get the
// burst once, then both refuse. Redis killed, each host's own bucket
// decides: it still allows what it has left (not refusing everything)
// and then refuses (not unlimited), and the decisions are counted.
func TestRateLimitSharedByAFleet(t *testing.T) {
	srv := redistest.Start(t)
	auth := config.AuthConfig{APIKeys: []string{rateKey}, RateLimit: 1, RateBurst: 6, RateLimitRedis: srv.URL}
	hosts := []*Gate{fleetGate(t, auth), fleetGate(t, auth)}
	allowed, refused := 0, false
	for i := range 40 {
		r := hosts[i%2].keys.Load().Verify(keyHeader(rateKey), "/v2/models/m/infer")
		if r.Status == fasthttp.StatusTooManyRequests {
			refused = true
			break
		}
		allowed++
	}
	// At 1/s, a slow machine may see one refill during the burst.
	if !refused || allowed < 6 || allowed > 7 {
		t.Fatalf("two hosts allowed %d requests of one key (refused: %v), want the one burst of 6 across both", allowed, refused)
	}
	for i, f := range hosts {
		if r := f.keys.Load().Verify(keyHeader(rateKey), "/v2/models/m/infer"); r.Status != fasthttp.StatusTooManyRequests {
			t.Errorf("host %d after the fleet's burst: %d, want 429", i, r.Status)
		}
		if n := f.RateLimitFallbacks(); n != 0 {
			t.Errorf("host %d counted %d fallbacks with Redis up", i, n)
		}
	}
	// Each host took about half the burst from its own bucket (kept in
	// step): what is left there is what it allows with Redis gone.
	srv.Kill()
	for i, f := range hosts {
		allowed, refused := 0, false
		for range 40 {
			r := f.keys.Load().Verify(keyHeader(rateKey), "/v2/models/m/infer")
			if r.Status == fasthttp.StatusTooManyRequests {
				refused = true
				break
			}
			allowed++
		}
		if allowed < 1 || !refused {
			t.Errorf("host %d with Redis killed: %d allowed, refused %v; want its own bucket's rest (at least 1), then 429", i, allowed, refused)
		}
		if n := f.RateLimitFallbacks(); n < int64(allowed)+1 {
			t.Errorf("host %d counted %d fallbacks for %d decisions without Redis", i, n, allowed+1)
		}
	}
}

// BenchmarkRateLimitedKey is the cost of a rate-limited key's check
// (Verify: the key's digest and constant-time comparison, then its
// bucket), with the bucket on this host and in a real redis-server on
// loopback; the bucket never empties, so each check takes a token. Redis
// gets seconds to answer (as in fleetGate), so that no check falls back
// and hides the cost: fallbacks/op shows it.
func BenchmarkRateLimitedKey(b *testing.B) {
	for _, where := range []string{"local", "redis"} {
		b.Run(where, func(b *testing.B) {
			auth := config.AuthConfig{APIKeys: []string{rateKey}, RateLimit: 1_000_000, RateBurst: 1_000_000}
			if where == "redis" {
				auth.RateLimitRedis = redistest.Start(b).URL
			}
			cfg := config.DefaultConfig()
			cfg.Auth = auth
			f := New(func() *config.Config { return cfg }, zerolog.Nop())
			f.fleet.timeout = 5 * time.Second
			keys, err := LoadKeys(auth)
			if err != nil {
				b.Fatal(err)
			}
			f.SetKeys(keys)
			defer f.SetKeys(nil)
			h := keyHeader(rateKey)
			for b.Loop() {
				if r := f.keys.Load().Verify(h, "/v2/models/m/infer"); r.Status != 0 {
					b.Fatalf("refused %d %s", r.Status, r.Msg)
				}
			}
			b.ReportMetric(float64(f.RateLimitFallbacks())/float64(b.N), "fallbacks/op")
		})
	}
}
