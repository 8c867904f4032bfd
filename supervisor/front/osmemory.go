package front

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// osMemory hands memory freed after a burst back to the OS promptly. The
// Go runtime returns freed heap gradually (its scavenger), and until the
// next GC not at all: after a flood of connections or of large bodies the
// master would keep its peak RSS for minutes. A gauge of what the burst
// held (body bytes, open connections) tells it when the burst is over; a
// forced GC is not free, so it runs at most once per freeInterval, later
// rather than never when bursts come closer together.
type osMemory struct {
	freeing  atomic.Bool
	lastFree atomic.Int64 // unix nanoseconds
}

const freeInterval = 5 * time.Second

// release schedules debug.FreeOSMemory unless one is already scheduled.
func (o *osMemory) release() {
	if !o.freeing.CompareAndSwap(false, true) {
		return
	}
	wait := time.Duration(o.lastFree.Load() + int64(freeInterval) - time.Now().UnixNano())
	time.AfterFunc(max(wait, 0), func() {
		defer o.freeing.Store(false)
		debug.FreeOSMemory()
		o.lastFree.Store(time.Now().UnixNano())
	})
}

// burstGauge tracks a level (body bytes held, connections open) and has
// its memory released once the level falls back under a quarter of a peak
// that reached at least the caller's threshold. The zero value is ready.
type burstGauge struct {
	level atomic.Int64
	peak  atomic.Int64
	mem   osMemory
}

// add moves the level by n and returns it.
func (g *burstGauge) add(n, threshold int64) int64 {
	v := g.level.Add(n)
	if n > 0 {
		for p := g.peak.Load(); v > p && !g.peak.CompareAndSwap(p, v); p = g.peak.Load() {
		}
		return v
	}
	if p := g.peak.Load(); p >= threshold && v <= p/4 && g.peak.CompareAndSwap(p, v) {
		g.mem.release()
	}
	return v
}
