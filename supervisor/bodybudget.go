package supervisor

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// bodyBudget bounds the request body bytes the master holds at once
// (limits.max_body_bytes_in_flight). A request reserves its declared
// Content-Length when its header arrives, before a byte of its body is
// read, and gives it back when it is answered; a chunked body reserves as
// it grows. So the master's memory for bodies is bounded by configuration,
// whatever clients declare or send.
//
// The last eighth of the budget is kept for small bodies (up to
// smallBodyBytes): clients that declare huge bodies and never send them
// can hold at most seven eighths, and ordinary requests keep flowing while
// the body timeout cuts them.
type bodyBudget struct {
	used atomic.Int64
	// peak is the most held since memory was last handed back to the OS.
	peak     atomic.Int64
	freeing  atomic.Bool
	lastFree atomic.Int64 // unix nanoseconds
}

// smallBodyBytes is the largest body that may use the share of the budget
// kept for small requests.
const smallBodyBytes = 1 << 20

// reserve takes n bytes of a budget of limit bytes for a body that will be
// total bytes long once n is added; false (nothing taken) when they do not
// fit.
func (b *bodyBudget) reserve(n, total, limit int64) bool {
	if n <= 0 {
		return true
	}
	ceiling := limit
	if total > smallBodyBytes {
		ceiling -= limit / 8
	}
	for {
		used := b.used.Load()
		if used+n > ceiling {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			b.notePeak(used + n)
			return true
		}
	}
}

func (b *bodyBudget) notePeak(used int64) {
	for {
		p := b.peak.Load()
		if used <= p || b.peak.CompareAndSwap(p, used) {
			return
		}
	}
}

// release gives n bytes back. When the budget empties after a burst of
// large bodies, the freed buffers are handed back to the OS promptly
// rather than whenever the runtime's scavenger gets to them, so the
// master's RSS returns to its resting size after an attack. A forced GC
// is not free: it runs at most once per freeInterval, later rather than
// never when bursts come closer together.
func (b *bodyBudget) release(n int64) {
	if n <= 0 {
		return
	}
	if b.used.Add(-n) > 0 || b.peak.Load() < freeAfterPeak || !b.freeing.CompareAndSwap(false, true) {
		return
	}
	wait := time.Duration(b.lastFree.Load() + int64(freeInterval) - time.Now().UnixNano())
	time.AfterFunc(max(wait, 0), func() {
		defer b.freeing.Store(false)
		b.peak.Store(0)
		debug.FreeOSMemory()
		b.lastFree.Store(time.Now().UnixNano())
	})
}

// inUse is the number of body bytes reserved now.
func (b *bodyBudget) inUse() int64 { return b.used.Load() }

const (
	// freeAfterPeak: bursts below this are left to the scavenger.
	freeAfterPeak = 64 << 20
	freeInterval  = 5 * time.Second
)
