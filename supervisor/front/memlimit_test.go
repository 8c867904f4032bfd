package front

import (
	"runtime/debug"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// TestMemoryLimitIsTheBodyBudget: the master's soft memory limit follows
// the configured body budget (start and reload), and a GOMEMLIMIT in the
// environment is left alone.
func TestMemoryLimitIsTheBodyBudget(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	t.Setenv("GOMEMLIMIT", "")
	c := &config.Config{Limits: config.LimitsConfig{MaxBodyBytesInFlight: 300 << 20}}
	ApplyMemoryLimit(c)
	if got, want := debug.SetMemoryLimit(-1), int64(300<<20+masterMemHeadroom); got != want {
		t.Fatalf("memory limit %d after a 300 MiB budget, want %d", got, want)
	}
	c.Limits.MaxBodyBytesInFlight = 512 << 20
	ApplyMemoryLimit(c)
	if got, want := debug.SetMemoryLimit(-1), int64(512<<20+masterMemHeadroom); got != want {
		t.Fatalf("memory limit %d after a reload to 512 MiB, want %d", got, want)
	}

	// The limit leaves the master's RSS rising by the budget at most:
	// past it, only what the master holds at rest (~18 MiB).
	if masterMemHeadroom > 16<<20 {
		t.Errorf("memory limit %d MiB over the budget; the master's RSS may rise past the budget by that less its memory at rest",
			masterMemHeadroom>>20)
	}

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	ApplyMemoryLimit(c)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Fatalf("memory limit %d with GOMEMLIMIT=1GiB set, want it kept (%d)", got, 1<<30)
	}
}
