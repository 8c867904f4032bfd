package front

import (
	"sync/atomic"

	"github.com/supervisor-dev/supervisor/internal/osmem"
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
	// burst hands the freed buffers back to the OS once the budget
	// empties after a burst of large bodies (internal/osmem).
	burst osmem.Gauge
}

// smallBodyBytes is the largest body that may use the share of the budget
// kept for small requests.
const smallBodyBytes = 1 << 20

// bodyBurst: bursts of bodies below this are left to the Go scavenger.
const bodyBurst = 64 << 20

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
			b.burst.Add(n, bodyBurst)
			return true
		}
	}
}

// release gives n bytes back.
func (b *bodyBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.used.Add(-n)
	b.burst.Add(-n, bodyBurst)
}

// inUse is the number of body bytes reserved now.
func (b *bodyBudget) inUse() int64 { return b.used.Load() }
