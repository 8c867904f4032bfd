package quarantine

import (
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/internal/poison"
)

// abandonedMax is how many abandoned requests the guard remembers for
// the poison quarantine (guard.go): the last ones, an older one
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
	token       uint64 // worker.TokenHeader: what workers record it by
	sent, until time.Time
}

// abandonedRing holds the last abandonedMax abandoned requests; its zero
// value is empty and ready. Safe for concurrent use.
type abandonedRing struct {
	mu   sync.Mutex
	reqs [abandonedMax]abandonedReq
	next int
	// lastCrash is the latest crash take was told of: a request
	// abandoned after it, but at work in it, is struck at once (add).
	lastCrash Exit
}

// add remembers r, in place of the oldest, unless a crash already
// happened while it was at work on it: then it returns true and keeps
// nothing, and the caller strikes r now. Under the same lock as take,
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

// in says whether the crash e happened while r was in flight, and its
// worker may have been at work on r (Exit.atWork: recorded, or nothing
// known).
func (r *abandonedReq) in(e Exit) bool {
	return r.model != "" && !r.sent.After(e.At) && r.until.After(e.At) && e.atWork(r.token)
}

// take removes and returns the requests the crash e may have been the
// doing of: in flight at it (sent at or before it, their deadline not
// passed) and at work in its worker. A request is taken once: it was at
// work on one worker, which died. The others stay, for the crash of the
// worker they were on.
func (a *abandonedRing) take(e Exit) []abandonedReq {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.At.After(a.lastCrash.At) {
		a.lastCrash = e
	}
	var out []abandonedReq
	for i := range a.reqs {
		r := &a.reqs[i]
		if !r.in(e) {
			continue
		}
		out = append(out, *r)
		*r = abandonedReq{}
	}
	return out
}
