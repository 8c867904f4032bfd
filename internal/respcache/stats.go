package respcache

import (
	"sync/atomic"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
)

// Stats are a segment's counters since it was created: Triton's cache_hit
// and cache_miss ({count, ns} of lookups) and the ring bytes holding
// entries.
type Stats struct {
	Hits, Misses          uint64
	HitNanos, MissNanos   uint64
	BytesUsed, BytesLimit int64
}

// Hit counts one lookup that found an entry, taking d.
func (s *Segment) Hit(d time.Duration) { s.count(&s.hdr.hits, &s.hdr.hitNanos, d) }

// Miss counts one lookup that found none, taking d.
func (s *Segment) Miss(d time.Duration) { s.count(&s.hdr.misses, &s.hdr.missNanos, d) }

func (s *Segment) count(n, ns *uint64, d time.Duration) {
	if s == nil {
		return
	}
	atomic.AddUint64(n, 1)
	atomic.AddUint64(ns, uint64(max(d, 0)))
}

// Stats reads the counters; the zero Stats for a nil segment, or when the
// mapping faults (its file was truncated).
func (s *Segment) Stats() (st Stats) {
	if s == nil {
		return Stats{}
	}
	_ = shm.Guard(func() { st = s.stats() })
	return st
}

func (s *Segment) stats() Stats {
	h := s.hdr
	return Stats{
		Hits: atomic.LoadUint64(&h.hits), HitNanos: atomic.LoadUint64(&h.hitNanos),
		Misses: atomic.LoadUint64(&h.misses), MissNanos: atomic.LoadUint64(&h.missNanos),
		BytesUsed:  int64(min(atomic.LoadUint64(&h.head), uint64(len(s.ring)))),
		BytesLimit: int64(len(s.ring)),
	}
}
