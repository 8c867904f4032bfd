package decodegate

import (
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// TestLargeDecodeBurstReleasesMemory: once the large lane empties after
// decodes of BurstBytes or more, the worker hands its freed memory back
// to the OS (internal/osmem).
func TestLargeDecodeBurstReleasesMemory(t *testing.T) {
	g := New(4 * BurstBytes)
	if g.Largest() < BurstBytes {
		t.Skipf("the large lane holds %d bytes with %d places, under BurstBytes: the test needs fewer CPUs", g.Largest(), g.places)
	}
	c, err := g.Enter(BurstBytes, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the release after the large decodes", func() bool {
		return g.burst.Freer.Released() == 1
	})
}
