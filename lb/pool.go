package lb

// pool is an immutable snapshot of the backends new requests may use.
// SetBackends replaces it whole, so readers need no lock.
type pool struct {
	backends []*backend
}

// pick returns the backend with the fewest requests in flight, skipping
// those in tried, or nil if none is left. The scan starts at start (mod the
// pool size) and only a strictly smaller count displaces the current choice,
// so among tied backends the first from start wins: a rotating start spreads
// ties round-robin.
func (pl *pool) pick(start uint64, tried []*backend) *backend {
	n := len(pl.backends)
	if n == 0 {
		return nil
	}
	i := int(start % uint64(n))
	var best *backend
	var bestLoad int64
	for range n {
		b := pl.backends[i]
		if i++; i == n {
			i = 0
		}
		if contains(tried, b) {
			continue
		}
		if load := b.inflight.Load(); best == nil || load < bestLoad {
			best, bestLoad = b, load
		}
	}
	return best
}

func contains(bs []*backend, b *backend) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}
