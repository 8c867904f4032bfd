package admission

import (
	"sync"
	"sync/atomic"

	"github.com/supervisor-dev/supervisor/internal/osmem"
)

// BodyBudget bounds the request body bytes the master holds at once
// (limits.max_body_bytes_in_flight). A request reserves its declared
// Content-Length when its header arrives, before a byte of its body is
// read, and gives it back when it is answered; a chunked body reserves as
// it grows. So the master's memory for bodies is bounded by configuration,
// whatever clients declare or send.
//
// The last eighth of the budget is kept for small bodies (up to
// SmallBodyBytes): clients that declare huge bodies and never send them
// can hold at most seven eighths, and ordinary requests keep flowing while
// the body timeout cuts them.
//
// One large body waiting for room may be the budget's heir (see
// Heir): room given back goes to it first.
type BodyBudget struct {
	used atomic.Int64
	// large is the part of used held by large bodies (over
	// SmallBodyBytes), the heir's included: what the heir may reach is
	// bounded by it, so that the eighth stays the small bodies'.
	large atomic.Int64
	// burst hands the freed buffers back to the OS once the budget
	// empties after a burst of large bodies (internal/osmem).
	burst osmem.Gauge
	// heir, when set, is fed first by release; while it is set,
	// reserve and release take mu.
	heir atomic.Pointer[Heir]
	mu   sync.Mutex
}

// SmallBodyBytes is the largest body that may use the share of the budget
// kept for small requests.
const SmallBodyBytes = 1 << 20

// bodyBurst: bursts of bodies below this are left to the Go scavenger.
const bodyBurst = 64 << 20

// LargePart is how much of n bytes, reserved for a body total bytes
// long, counts as large: all of them or none.
func LargePart(n, total int64) int64 {
	if total > SmallBodyBytes {
		return n
	}
	return 0
}

// Reserve takes n bytes of a budget of limit bytes for a body that will be
// total bytes long once n is added; false (nothing taken) when they do not
// fit. The room an heir may take is not there to be reserved.
func (b *BodyBudget) Reserve(n, total, limit int64) bool {
	if n <= 0 {
		return true
	}
	var claim int64
	if b.heir.Load() != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		claim = b.claimLocked(limit)
	}
	ceiling := limit - claim
	if total > SmallBodyBytes {
		ceiling -= limit / 8
	}
	for {
		used := b.used.Load()
		if used+n > ceiling {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			b.large.Add(LargePart(n, total))
			b.burst.Add(n, bodyBurst)
			return true
		}
	}
}

// Release gives n bytes back, large of them reserved for large bodies;
// the heir takes what it may of them first.
func (b *BodyBudget) Release(n, large int64) {
	if n <= 0 {
		return
	}
	b.large.Add(-large)
	if b.heir.Load() != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		n -= b.feedHeirLocked(n) // handed over: still in use
	}
	b.used.Add(-n)
	b.burst.Add(-n, bodyBurst)
}

// ReserveAnswer takes n bytes of a budget of limit bytes for an answer
// held until its client reads it, as a large body (whatever its size):
// answers wait on a client, and one that never reads must not reach the
// eighth kept for small request bodies. Counted as small, answers of up
// to 1 MiB let one such client fill the whole budget and refuse every
// request until write_timeout cut it (cmd/hostile grpc-unread-large:
// 1 MiB answers). releaseAnswer gives n back.
func (b *BodyBudget) ReserveAnswer(n, limit int64) bool { return b.Reserve(n, answerTotal, limit) }

func (b *BodyBudget) ReleaseAnswer(n int64) { b.Release(n, LargePart(n, answerTotal)) }

// answerTotal is the size an answer is reserved as: a large body's.
const answerTotal = SmallBodyBytes + 1

// InUse is the number of body bytes reserved now.
func (b *BodyBudget) InUse() int64 { return b.used.Load() }

// Large is the part of InUse held by large bodies (over SmallBodyBytes).
func (b *BodyBudget) Large() int64 { return b.large.Load() }
