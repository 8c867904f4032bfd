package lb

import (
	"slices"
	"strings"
)

// SetBackends atomically replaces the pool. Backends that stay (same Name
// and Socket) keep their in-flight count and connection pool. Removed ones
// get no new request and have their connections closed once idle. A
// duplicate Name in bs is ignored after its first occurrence.
func (p *Proxy) SetBackends(bs []Backend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := &pool{backends: make([]*backend, 0, len(bs))}
	in := make(map[*backend]bool, len(bs))
	for _, spec := range bs {
		b := p.known[spec.Name]
		if b != nil && in[b] {
			p.log.Warn().Str("backend", spec.Name).Msg("lb: duplicate backend name ignored; names must be unique per worker process")
			continue
		}
		if b == nil || b.socket != spec.Socket {
			if b != nil {
				b.retire()
			}
			b = newBackend(spec, p.opts, transport{&p.exchanges})
			p.known[spec.Name] = b
		} else {
			b.revive()
		}
		in[b] = true
		next.backends = append(next.backends, b)
	}
	// Publish first, then retire: a request holding the old snapshot that
	// picks a retired backend sees removed and picks again.
	old := p.pool.Swap(next)
	for _, b := range old.backends {
		if !in[b] {
			b.retire()
		}
	}
	for name, b := range p.known {
		if !in[b] && b.inflight.Load() == 0 {
			delete(p.known, name)
		}
	}
}

// Stats returns the counters of the pool's backends, in pool order, then of
// removed backends still draining, by name.
func (p *Proxy) Stats() []BackendStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.pool.Load().backends
	out := make([]BackendStats, 0, len(p.known))
	in := make(map[*backend]bool, len(cur))
	for _, b := range cur {
		in[b] = true
		out = append(out, b.stats())
	}
	draining := make([]BackendStats, 0, len(p.known)-len(cur))
	for _, b := range p.known {
		if !in[b] {
			draining = append(draining, b.stats())
		}
	}
	slices.SortFunc(draining, func(a, b BackendStats) int { return strings.Compare(a.Name, b.Name) })
	return append(out, draining...)
}

// Idle returns a channel closed when the named backend, in the pool or
// removed, has no request in flight. The master waits on it to drain a
// retired worker before stopping it. An unknown name gets a closed channel.
func (p *Proxy) Idle(name string) <-chan struct{} {
	p.mu.Lock()
	b := p.known[name]
	p.mu.Unlock()
	if b == nil {
		return closedChan()
	}
	return b.idleChan()
}
