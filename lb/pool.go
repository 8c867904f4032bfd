package lb

import "sync/atomic"

// pool is an immutable snapshot of the backends new requests may use.
// SetBackends replaces it whole, so readers need no lock.
type pool struct {
	backends []*backend
}

// pick returns the backend with the fewest requests in flight, skipping
// those in tried and, when allow is not nil, those it refuses; nil if none
// is left. Among the k backends tied at the least load it takes the
// (start mod k)-th in pool order, so a start that rotates on every pick
// spreads ties round-robin, over whichever subset allow leaves.
func (pl *pool) pick(start uint64, tried []*backend, allow func(string) bool) *backend {
	var best *backend
	var bestLoad int64
	ties := 0
	for _, b := range pl.backends {
		if !eligible(b, tried, allow) {
			continue
		}
		switch load := b.inflight.Load(); {
		case best == nil || load < bestLoad:
			best, bestLoad, ties = b, load, 1
		case load == bestLoad:
			ties++
		}
	}
	if ties <= 1 {
		return best
	}
	j := start % uint64(ties)
	for _, b := range pl.backends {
		// Loads move meanwhile: a backend no longer at bestLoad is passed
		// over, and best stands if the count runs out.
		if eligible(b, tried, allow) && b.inflight.Load() == bestLoad {
			if j == 0 {
				return b
			}
			j--
		}
	}
	return best
}

func eligible(b *backend, tried []*backend, allow func(string) bool) bool {
	return !contains(tried, b) && (allow == nil || allow(b.name))
}

// A Route is the part of the pool one kind of request may use, chosen by a
// predicate on the backend's name, with its own tie-break rotation: the
// requests of one route share its idle backends round-robin whatever
// other routes do. Create one per key (a model, say) and reuse it; it is
// safe for concurrent use.
type Route struct {
	allow func(name string) bool
	turn  atomic.Uint64
}

// NewRoute returns the route of the backends allow accepts, by
// Backend.Name. allow is called during picks, for every candidate,
// possibly twice per pick and from many goroutines at once: it must be
// cheap, safe for concurrent use, and must not call into the Proxy. It is
// asked afresh at every pick, so it may follow a changing view.
func NewRoute(allow func(name string) bool) *Route { return &Route{allow: allow} }

func contains(bs []*backend, b *backend) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}
