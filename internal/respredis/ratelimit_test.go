package respredis

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/respredis/redistest"
)

// newLimiter is a Limiter of url that waits up to timeout. The tests of
// what Redis decides give it seconds: at LimitTimeout, a machine loaded
// by other tests (and the race detector) may see a decision fall back.
func newLimiter(t testing.TB, url string, timeout time.Duration) *Limiter {
	t.Helper()
	l, err := NewLimiter(url, timeout, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestLimiterSharesOneBudget: two limiters on one Redis (two hosts of a
// fleet) take from one bucket: together they get the burst, then both are
// refused; another bucket, or the same one with another burst, is full.
func TestLimiterSharesOneBudget(t *testing.T) {
	srv := redistest.Start(t)
	hosts := []*Limiter{newLimiter(t, srv.URL, 5*time.Second), newLimiter(t, srv.URL, 5*time.Second)}
	const burst = 10
	allowed, refusedAt := 0, -1
	for i := range 40 {
		ok, answered := hosts[i%2].Allow("k1", 1, burst)
		if !answered {
			t.Fatalf("request %d: Redis did not answer", i)
		}
		if !ok {
			refusedAt = i
			break
		}
		allowed++
	}
	// At 1/s, a slow machine may see one more refill during the burst.
	if refusedAt < 0 || allowed < burst || allowed > burst+1 {
		t.Fatalf("the two hosts got %d requests before a refusal (at %d), want the shared burst of %d", allowed, refusedAt, burst)
	}
	for i, h := range hosts {
		if ok, answered := h.Allow("k1", 1, burst); ok || !answered {
			t.Errorf("host %d after the shared burst: allowed %v answered %v, want refused", i, ok, answered)
		}
	}
	if ok, _ := hosts[0].Allow("k2", 1, burst); !ok {
		t.Error("another key's bucket was spent too")
	}
	if ok, _ := hosts[1].Allow("k1", 1, burst+1); !ok {
		t.Error("a new burst for the key did not start a full bucket")
	}
}

// TestLimiterRate: at 20/s with a burst of 2, a loop asking for 300ms
// gets the burst and at least one refill, and never more than the rate
// allows: the bucket refills at the rate, on Redis's clock.
func TestLimiterRate(t *testing.T) {
	srv := redistest.Start(t)
	l := newLimiter(t, srv.URL, 5*time.Second)
	start := time.Now()
	allowed := 0
	for time.Since(start) < 300*time.Millisecond {
		ok, answered := l.Allow("k", 20, 2)
		if !answered {
			t.Fatal("Redis did not answer")
		}
		if ok {
			allowed++
		}
	}
	most := 2 + int(20*time.Since(start).Seconds()) + 1
	if allowed < 3 || allowed > most {
		t.Fatalf("%d requests allowed in %s at 20/s, burst 2: want 3 to %d", allowed, time.Since(start).Round(time.Millisecond), most)
	}
}

// TestLimiterWithoutRedis: a killed Redis (its connections refused) or
// one that never answers (at LimitTimeout) leaves the first decision to
// the caller at once, and is then not asked for limitPause: the requests
// meanwhile are decided at once, by the caller.
func TestLimiterWithoutRedis(t *testing.T) {
	srv := redistest.Start(t)
	killed := newLimiter(t, srv.URL, 5*time.Second) // refused at once once killed
	if _, answered := killed.Allow("k", 1, 1); !answered {
		t.Fatal("a live Redis did not answer")
	}
	srv.Kill()
	hung, _ := blackHole(t)
	for name, l := range map[string]*Limiter{"killed": killed, "never answers": newLimiter(t, hung, LimitTimeout)} {
		start := time.Now()
		if _, answered := l.Allow("k", 1, 1); answered {
			t.Fatalf("%s: Redis answered", name)
		}
		if d := time.Since(start); d > slowLookup {
			t.Fatalf("%s: the first decision took %s, want about %s at most", name, d, LimitTimeout)
		}
		start = time.Now()
		for range 100 {
			if _, answered := l.Allow("k", 1, 1); answered {
				t.Fatalf("%s: answered while paused", name)
			}
		}
		if d := time.Since(start); d > slowLookup {
			t.Fatalf("%s: 100 decisions during the pause took %s: Redis was asked again", name, d)
		}
	}
}

// BenchmarkLimiterAllow is the cost of one decision against a real
// redis-server on loopback: one EVALSHA of the GCRA script, a round trip.
// The bucket never empties (10^6/s), so every call runs the whole script.
// The timeout is seconds, not LimitTimeout: on a loaded machine a call
// past 20ms would pause Redis for a second, and the calls meanwhile
// (decided at once, unanswered) would hide the cost measured.
// unanswered/op shows that none was.
func BenchmarkLimiterAllow(b *testing.B) {
	l := newLimiter(b, redistest.Start(b).URL, 5*time.Second)
	unanswered := 0
	for b.Loop() {
		if _, answered := l.Allow("bench", 1_000_000, 1_000_000); !answered {
			unanswered++
		}
	}
	b.ReportMetric(float64(unanswered)/float64(b.N), "unanswered/op")
}

// BenchmarkLimiterAllowParallel is the same with GOMAXPROCS callers at
// once, as the master's connections decide concurrently: the
// throughput of one Redis for one key.
func BenchmarkLimiterAllowParallel(b *testing.B) {
	l := newLimiter(b, redistest.Start(b).URL, 5*time.Second)
	var unanswered atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, answered := l.Allow("bench", 1_000_000, 1_000_000); !answered {
				unanswered.Add(1)
			}
		}
	})
	b.ReportMetric(float64(unanswered.Load())/float64(b.N), "unanswered/op")
}
