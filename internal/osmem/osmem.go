package osmem

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// FreeInterval is the least time between two releases of one Freer: a
// forced GC is not free.
const FreeInterval = 5 * time.Second

// Freer hands freed heap back to the OS. Its zero value is ready. Safe
// for concurrent use.
type Freer struct {
	freeing  atomic.Bool
	lastFree atomic.Int64 // unix nanoseconds
	// freed counts the releases done, for tests.
	freed atomic.Int64
}

// Release schedules a release, FreeInterval after the last one at the
// earliest, unless one is already scheduled. It returns at once.
func (f *Freer) Release() {
	if !f.freeing.CompareAndSwap(false, true) {
		return
	}
	wait := time.Duration(f.lastFree.Load() + int64(FreeInterval) - time.Now().UnixNano())
	time.AfterFunc(max(wait, 0), func() {
		defer f.freeing.Store(false)
		// The first collection moves sync.Pool contents (pooled
		// inflate chunks, fasthttp's buffers) to their victim caches;
		// FreeOSMemory's own collection then drops them, before it
		// returns the pages.
		runtime.GC()
		debug.FreeOSMemory()
		f.lastFree.Store(time.Now().UnixNano())
		f.freed.Add(1)
	})
}

// Released is how many releases have run.
func (f *Freer) Released() int64 { return f.freed.Load() }

// Gauge tracks a level and has its Freer release once the level falls
// back under a quarter of a peak that reached at least the caller's
// threshold. The zero value is ready. Safe for concurrent use.
type Gauge struct {
	level atomic.Int64
	peak  atomic.Int64
	Freer Freer
}

// Add moves the level by n and returns it; a fall that ends a burst of
// at least threshold releases (see Gauge).
func (g *Gauge) Add(n, threshold int64) int64 {
	v := g.level.Add(n)
	if n > 0 {
		for p := g.peak.Load(); v > p && !g.peak.CompareAndSwap(p, v); p = g.peak.Load() {
		}
		return v
	}
	if p := g.peak.Load(); p >= threshold && v <= p/4 && g.peak.CompareAndSwap(p, v) {
		g.Freer.Release()
	}
	return v
}
