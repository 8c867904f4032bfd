package front

import (
	"sync"
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
//
// One large body waiting for room may be the budget's heir (see
// bodyHeir): room given back goes to it first.
type bodyBudget struct {
	used atomic.Int64
	// large is the part of used held by large bodies (over
	// smallBodyBytes), the heir's included: what the heir may reach is
	// bounded by it, so that the eighth stays the small bodies'.
	large atomic.Int64
	// burst hands the freed buffers back to the OS once the budget
	// empties after a burst of large bodies (internal/osmem).
	burst osmem.Gauge
	// heir, when set, is fed first by release; while it is set,
	// reserve and release take mu.
	heir atomic.Pointer[bodyHeir]
	mu   sync.Mutex
}

// smallBodyBytes is the largest body that may use the share of the budget
// kept for small requests.
const smallBodyBytes = 1 << 20

// bodyBurst: bursts of bodies below this are left to the Go scavenger.
const bodyBurst = 64 << 20

// largePart is how much of n bytes, reserved for a body total bytes
// long, counts as large: all of them or none.
func largePart(n, total int64) int64 {
	if total > smallBodyBytes {
		return n
	}
	return 0
}

// reserve takes n bytes of a budget of limit bytes for a body that will be
// total bytes long once n is added; false (nothing taken) when they do not
// fit. The room an heir may take is not there to be reserved.
func (b *bodyBudget) reserve(n, total, limit int64) bool {
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
	if total > smallBodyBytes {
		ceiling -= limit / 8
	}
	for {
		used := b.used.Load()
		if used+n > ceiling {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			b.large.Add(largePart(n, total))
			b.burst.Add(n, bodyBurst)
			return true
		}
	}
}

// release gives n bytes back, large of them reserved for large bodies;
// the heir takes what it may of them first.
func (b *bodyBudget) release(n, large int64) {
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

// reserveAnswer takes n bytes of a budget of limit bytes for an answer
// held until its client reads it, as a large body (whatever its size):
// answers wait on a client, and one that never reads must not reach the
// eighth kept for small request bodies. Counted as small, answers of up
// to 1 MiB let one such client fill the whole budget and refuse every
// request until write_timeout cut it (cmd/hostile grpc-unread-large:
// 1 MiB answers). releaseAnswer gives n back.
func (b *bodyBudget) reserveAnswer(n, limit int64) bool { return b.reserve(n, answerTotal, limit) }

func (b *bodyBudget) releaseAnswer(n int64) { b.release(n, largePart(n, answerTotal)) }

// answerTotal is the size an answer is reserved as: a large body's.
const answerTotal = smallBodyBytes + 1

// inUse is the number of body bytes reserved now.
func (b *bodyBudget) inUse() int64 { return b.used.Load() }
