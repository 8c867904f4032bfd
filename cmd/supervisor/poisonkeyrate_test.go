package main

import (
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// TestPoisonKeyRateZeroCountsFallbackKeys: with limits.poison_key_rate 0
// a request whose client hung up is keyed by its bytes as sent, never
// decoded, and /metrics (supervisor_poison_fallback_keys_total) and
// status --json (poison_fallback_keys) count it. The body waits in the
// infer worker's queue for a preferred batch that never fills, so the
// hang-up lands while it is in flight.
func TestPoisonKeyRateZeroCountsFallbackKeys(t *testing.T) {
	dir := t.TempDir()
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		models:   map[string]string{"queued": writeModel(t, dir, "queued", onnxmodel.ModByXMinus3())},
		batching: map[string]string{"queued": "{max_batch_size: 8, max_queue_delay: 10s, preferred_batch_sizes: [3]}"},
		extra:    "limits:\n  poison_key_rate: 0\n"})
	const fallback = "supervisor_poison_fallback_keys_total"
	if got := scrapeMetrics(t, in)[fallback]; got != 0 {
		t.Fatalf("%s = %v before any hang-up, want 0", fallback, got)
	}
	if err := postAndHangUp(in, "/v2/models/queued/infer", modBody("5,6,7,8")); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 50*time.Millisecond, "the hang-up keyed by its bytes as sent in /metrics", func() bool {
		return scrapeMetrics(t, in)[fallback] == 1
	})
	if n := in.status().PoisonFallbackKeys; n != 1 {
		t.Errorf("status --json poison_fallback_keys = %d, want 1", n)
	}
}
