// Package handoff carries a value from one stage of a request to a later
// one that only shares a pointer with it: the front's header hook to its
// handler (keyed by the request's header), the lb's DoRouteFor to its
// transport (keyed by the request), the gRPC front's handler to its codec
// (keyed by the answer message).
//
// Contract: a Map is keyed by pointers; what is stored under one is there
// until it is taken, deleted or replaced. The zero Map is empty and ready.
// Safe for concurrent use.
//
// Why not a sync.Map: each of those stores and deletes one key per
// request, and a sync.Map allocates an entry node for every store (48
// bytes, 1–2% of the master's CPU under load with the GC it feeds).
// Here a key lives in one of 16 shards, each a map under its own mutex:
// a map reuses its deleted slots, and requests on different CPUs rarely
// meet on one lock (BenchmarkHandoff: 26–35 ns a store and take at 64
// goroutines on 2 cores against sync.Map's 61–72, with no allocation).
package handoff

import (
	"sync"
	"unsafe"
)

const shards = 16

// Map maps *K to V. The zero value is ready to use.
type Map[K any, V any] struct {
	shards [shards]shard[K, V]
}

type shard[K any, V any] struct {
	mu sync.Mutex
	m  map[*K]V
	_  [48]byte // a cache line per shard: 8 (mutex) + 8 (map) + 48
}

// shard is k's. The keys are objects of hundreds of bytes or more, so
// the address bits above 8 spread them.
func (m *Map[K, V]) shard(k *K) *shard[K, V] {
	p := uintptr(unsafe.Pointer(k))
	return &m.shards[(p>>8^p>>12)%shards]
}

// Swap stores v under k and returns what was there, if anything.
func (m *Map[K, V]) Swap(k *K, v V) (old V, had bool) {
	s := m.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[*K]V)
	}
	old, had = s.m[k]
	s.m[k] = v
	return old, had
}

// Store stores v under k.
func (m *Map[K, V]) Store(k *K, v V) { m.Swap(k, v) }

// Load returns what is stored under k, if anything.
func (m *Map[K, V]) Load(k *K) (v V, ok bool) {
	s := m.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.m[k]
	return v, ok
}

// Take removes and returns what is stored under k, if anything.
func (m *Map[K, V]) Take(k *K) (v V, ok bool) {
	s := m.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.m[k]
	if ok {
		delete(s.m, k)
	}
	return v, ok
}

// Delete removes what is stored under k.
func (m *Map[K, V]) Delete(k *K) { m.Take(k) }

// Len counts the keys stored (for tests and leak checks).
func (m *Map[K, V]) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
