package osmem

import (
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// TestGaugeReleasesWhenABurstEnds: a level that reached the threshold
// releases once it falls to a quarter of its peak, not before; the
// release runs (the first one at once).
func TestGaugeReleasesWhenABurstEnds(t *testing.T) {
	var g Gauge
	g.Add(100, 100)
	g.Add(-70, 100) // 30: above a quarter of 100
	if g.Freer.freeing.Load() {
		t.Fatal("a release was scheduled while the level was still over a quarter of its peak")
	}
	g.Add(-10, 100) // 20
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the release after the burst", func() bool {
		return g.Freer.Released() == 1
	})
}

// TestGaugeIgnoresSmallBursts: a peak under the threshold releases
// nothing when it empties.
func TestGaugeIgnoresSmallBursts(t *testing.T) {
	var g Gauge
	g.Add(99, 100)
	if v := g.Add(-99, 100); v != 0 {
		t.Fatalf("level %d after adding 99 and taking it back, want 0", v)
	}
	if g.Freer.freeing.Load() || g.Freer.Released() != 0 {
		t.Fatal("a burst under the threshold scheduled a release")
	}
}

// TestFreerWaitsOutTheInterval: a release asked for right after one ran
// is scheduled, not run, within FreeInterval; asking again meanwhile
// schedules nothing more.
func TestFreerWaitsOutTheInterval(t *testing.T) {
	var f Freer
	f.Release()
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the first release", func() bool {
		return f.Released() == 1 && !f.freeing.Load()
	})
	f.Release()
	f.Release()
	if !f.freeing.Load() {
		t.Fatal("a release asked for after the first was not scheduled")
	}
	if n := f.Released(); n != 1 {
		t.Fatalf("%d releases ran within FreeInterval of the first, want 1", n)
	}
}
