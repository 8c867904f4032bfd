package quarantine

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// spacedJSON is modJSON with n spaces of padding: one tensor whose key
// as sent differs from its decoded key, of any size.
func spacedJSON(n int) []byte {
	return []byte(strings.Replace(modJSON, `"inputs":`, `"inputs":`+strings.Repeat(" ", n), 1))
}

// testKeyRate is the rate keyRate refills at in these tests:
// limits.poison_key_rate's default.
var testKeyRate = int64(config.DefaultConfig().Limits.PoisonKeyRate)

// bytesDue is how long keyRate takes to refill n bytes at testKeyRate,
// rounded up.
func bytesDue(n int) time.Duration {
	return time.Duration(float64(n)/float64(testKeyRate)*float64(time.Second)) + time.Nanosecond
}

// TestAbandonKeyRateFallsBackToSentKey: abandoned requests are keyed by
// their decoded tensors while the bucket (max_body_bytes deep) holds
// their bytes, by their bytes as sent past it, and decoded again once
// the rate has refilled them; a gzip'd body is charged what it inflates
// to, into debt.
func TestAbandonKeyRateFallsBackToSentKey(t *testing.T) {
	f, _, c := poisonRig(2, crashedYes)
	c.MaxBodyBytes = 1000
	ctx := keyedRequest(spacedJSON(300 - len(modJSON)))
	decoded, sent := f.Key(ctx), f.sentKey(ctx)
	if decoded == sent {
		t.Fatal("the padded body's decoded key is its key as sent: the test cannot tell them apart")
	}
	t0 := time.Now()
	for i, want := range []bool{true, true, true, false, false} { // 3 × 300 bytes fit in 1000
		if got := f.abandonKey(ctx, t0) == decoded; got != want {
			t.Fatalf("abandoned request %d at one instant: decoded %v, want %v", i, got, want)
		}
	}
	if f.abandonKey(ctx, t0.Add(bytesDue(200))) != decoded { // 100 left + 200 refilled
		t.Fatal("after the rate refilled a request's bytes it was not decoded")
	}
	if f.abandonKey(ctx, t0.Add(bytesDue(200))) != sent {
		t.Fatal("a second request at the same instant was decoded past the rate")
	}

	big := spacedJSON(900 - len(modJSON))
	gz := keyedRequest(gzipAt(t, big, 9), "Content-Encoding", "gzip")
	t1 := t0.Add(time.Second) // full again
	if f.abandonKey(gz, t1) != f.Key(keyedRequest(big)) {
		t.Fatal("a gzip'd abandoned request was not decoded with the bucket full")
	}
	if f.abandonKey(ctx, t1) != sent { // 1000 - 900 inflated: no room for 300
		t.Fatal("a gzip'd body was charged its compressed size, not what it inflated to")
	}
}

// TestPoisonKeyRateIsConfigured: limits.poison_key_rate 0 keys every
// abandoned request by its bytes as sent; a reload to 1000 bytes per
// second decodes again, refilling at that rate (the default would have
// refilled the bucket within a microsecond); every fallback is counted.
func TestPoisonKeyRateIsConfigured(t *testing.T) {
	f, _, c := poisonRig(2, crashedYes)
	c.MaxBodyBytes = 1000
	c.Limits.PoisonKeyRate = 0
	ctx := keyedRequest(spacedJSON(300 - len(modJSON)))
	decoded, sent := f.Key(ctx), f.sentKey(ctx)
	t0 := time.Now()
	if f.abandonKey(ctx, t0) != sent {
		t.Fatal("with poison_key_rate 0 an abandoned request was decoded")
	}
	reloaded := *c
	reloaded.Limits.PoisonKeyRate = 1000
	f.cfg.Store(&reloaded)
	for i, want := range []poison.Key{decoded, decoded, decoded, sent} { // 3 × 300 bytes fit in 1000
		if f.abandonKey(ctx, t0) != want {
			t.Fatalf("abandoned request %d after the reload to 1000 B/s: want decoded %v", i, want == decoded)
		}
	}
	if f.abandonKey(ctx, t0.Add(100*time.Millisecond)) != sent { // 100 left + 100 refilled
		t.Fatal("a request was decoded 100 ms on: the bucket refilled faster than poison_key_rate")
	}
	if f.abandonKey(ctx, t0.Add(200*time.Millisecond)) != decoded { // 100 left + 200 refilled
		t.Fatal("a request was not decoded 200 ms on, with 300 bytes refilled at poison_key_rate")
	}
	if n := f.FallbackKeys(); n != 3 {
		t.Errorf("PoisonFallbackKeys = %d, want 3 (rate 0, bucket empty, refill short)", n)
	}
}

// TestSentKeyIsQuarantined: a body struck by its key as sent (abandoned
// past the rate) is refused when the same bytes come again; the same
// tensors spelled otherwise pass.
func TestSentKeyIsQuarantined(t *testing.T) {
	f, p, c := poisonRig(2, crashedYes)
	ctx := keyedRequest(spacedJSON(5))
	for range 2 {
		f.strike("m", f.sentKey(ctx), c)
	}
	if code, _, _ := send(f, c, string(spacedJSON(5))); code != fasthttp.StatusUnprocessableEntity || p.sent != 0 {
		t.Fatalf("the bytes struck twice by their key as sent: %d after %d sent, want 422 after 0", code, p.sent)
	}
	if code, _, _ := send(f, c, modJSON); code != fasthttp.StatusOK {
		t.Fatalf("the same tensors without the padding: %d, want 200 (quarantined by bytes only)", code)
	}
}

// TestAbandonFloodHoldsTheRate: a flood of abandoned requests, one every
// microsecond for 10 ms, gzip'd so that each inflates, has no more
// decoded than the bucket's depth plus the rate over the span plus one
// body (the last one's debt), and no less than the rate less one body:
// the rate is spent, not starved.
func TestAbandonFloodHoldsTheRate(t *testing.T) {
	f, _, c := poisonRig(2, crashedYes)
	c.MaxBodyBytes = 64 << 10
	big := spacedJSON(16<<10 - len(modJSON))
	gz := keyedRequest(gzipAt(t, big, 9), "Content-Encoding", "gzip")
	sent := f.sentKey(gz)
	t0 := time.Now()
	const span = 10 * time.Millisecond
	decoded := 0
	for at := time.Duration(0); at < span; at += time.Microsecond {
		if f.abandonKey(gz, t0.Add(at)) != sent {
			decoded += len(big)
		}
	}
	rate := int(span.Seconds() * float64(c.Limits.PoisonKeyRate))
	if hi := int(c.MaxBodyBytes) + rate + len(big); decoded > hi {
		t.Errorf("decoded %d bytes of abandoned requests in %v, want at most %d (depth + rate + one body)", decoded, span, hi)
	}
	if lo := rate - len(big); decoded < lo {
		t.Errorf("decoded %d bytes of abandoned requests in %v, want at least %d (the rate less one body)", decoded, span, lo)
	}
}

// BenchmarkAbandonFlood is the abandon path's keying under a flood of
// hang-ups of a 40 KB JSON body (BenchmarkPoisonKey's), on the real
// clock with max_body_bytes 1 MiB: decoded-MB/s stays at or under
// limits.poison_key_rate (64 MiB/s = 67 MB/s, plus the 1 MiB depth over the
// run) however fast the flood (under it only when the machine cannot
// decode that fast), and ns/op falls from the decode's ~200 us towards
// the ~5 us of the key as sent.
func BenchmarkAbandonFlood(b *testing.B) {
	f, _, c := poisonRig(2, crashedYes)
	c.MaxBodyBytes = 1 << 20
	ctx := keyedRequest(int64JSON(8192))
	sent := f.sentKey(ctx)
	decoded := 0
	start := time.Now()
	for b.Loop() {
		if f.abandonKey(ctx, time.Now()) != sent {
			decoded += len(ctx.Request.Body())
		}
	}
	b.ReportMetric(float64(decoded)/time.Since(start).Seconds()/1e6, "decoded-MB/s")
}

// TestKeyRateClockGoesBack: a call whose clock reads earlier than the
// last neither refills the bucket nor moves its refill back, so a clock
// that jumps back and forth mints no bytes.
func TestKeyRateClockGoesBack(t *testing.T) {
	var k keyRate
	const depth = 1000
	t1 := time.Now()
	if !k.take(depth, depth, testKeyRate, t1) {
		t.Fatal("a full bucket refused its depth")
	}
	if k.take(1, depth, testKeyRate, t1.Add(-time.Hour)) {
		t.Fatal("an empty bucket gave a byte at a clock an hour back")
	}
	at := t1.Add(bytesDue(100))
	if k.take(depth, depth, testKeyRate, at) {
		t.Fatal("after the clock went back and forth the bucket refilled from the earlier reading")
	}
	if !k.take(100, depth, testKeyRate, at) {
		t.Fatal("the bytes refilled since the last forward reading were refused")
	}
}
