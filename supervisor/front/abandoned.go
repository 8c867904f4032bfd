package front

import (
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/internal/poison"
)

// abandonedMax is how many abandoned requests the front remembers for
// the poison quarantine (poison.go): the last ones, an older one
// overwritten by a newer. 256 covers every request a busy server has
// abandoned within a request's deadline, short of a flood of hang-ups,
// which can then only make a poison body take more tries to quarantine.
const abandonedMax = 256

// abandonedReq is a request whose client hung up while a worker had it:
// its quarantine key and model, and the span in which a worker's crash
// may have been its doing (from when it was sent to its deadline).
type abandonedReq struct {
	model       string
	key         poison.Key
	sent, until time.Time
}

// abandonedRing holds the last abandonedMax abandoned requests; its zero
// value is empty and ready. Safe for concurrent use.
type abandonedRing struct {
	mu   sync.Mutex
	reqs [abandonedMax]abandonedReq
	next int
	// lastCrash is the latest crash takeAt was told of: a request
	// abandoned after it, but in flight at it, is struck at once (add).
	lastCrash time.Time
}

// add remembers r, in place of the oldest, unless a crash already
// happened while it was in flight: then it returns true and keeps
// nothing, and the caller strikes r now. Under the same lock as takeAt,
// so a crash racing the hang-up strikes r exactly once.
func (a *abandonedRing) add(r abandonedReq) (crashed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.in(a.lastCrash) {
		return true
	}
	a.reqs[a.next] = r
	a.next = (a.next + 1) % abandonedMax
	return false
}

// in says whether a crash at at happened while r was in flight.
func (r *abandonedReq) in(at time.Time) bool {
	return r.model != "" && !r.sent.After(at) && r.until.After(at)
}

// takeAt removes and returns the requests a worker's crash at at may have
// been the doing of: sent at or before at, their deadline not passed. A
// request is taken once: it was in flight on one worker, which died.
func (a *abandonedRing) takeAt(at time.Time) []abandonedReq {
	a.mu.Lock()
	defer a.mu.Unlock()
	if at.After(a.lastCrash) {
		a.lastCrash = at
	}
	var out []abandonedReq
	for i := range a.reqs {
		r := &a.reqs[i]
		if !r.in(at) {
			continue
		}
		out = append(out, *r)
		*r = abandonedReq{}
	}
	return out
}
