package handoff

import (
	"sync"
	"testing"
)

type key struct{ _ [512]byte }

// TestStoreLoadTakeDelete: each operation sees what the others left,
// across many keys (all shards).
func TestStoreLoadTakeDelete(t *testing.T) {
	var m Map[key, int]
	keys := make([]*key, 200)
	for i := range keys {
		keys[i] = &key{}
		m.Store(keys[i], i)
	}
	if n := m.Len(); n != len(keys) {
		t.Fatalf("Len %d after %d stores, want %d", n, len(keys), len(keys))
	}
	for i, k := range keys {
		if v, ok := m.Load(k); !ok || v != i {
			t.Fatalf("Load(key %d) = %d, %v; want %d, true", i, v, ok, i)
		}
	}
	if old, had := m.Swap(keys[0], -1); !had || old != 0 {
		t.Errorf("Swap returned %d, %v; want 0, true", old, had)
	}
	if v, ok := m.Take(keys[0]); !ok || v != -1 {
		t.Errorf("Take = %d, %v; want -1, true", v, ok)
	}
	if _, ok := m.Take(keys[0]); ok {
		t.Error("a second Take found the key again")
	}
	for _, k := range keys[1:] {
		m.Delete(k)
	}
	if n := m.Len(); n != 0 {
		t.Errorf("Len %d after deleting every key, want 0", n)
	}
	if _, had := m.Swap(&key{}, 1); had {
		t.Error("Swap on a new key said it had one")
	}
}

// TestConcurrentHandoffs: goroutines handing off on keys of their own
// each get back their own value (run with -race).
func TestConcurrentHandoffs(t *testing.T) {
	var m Map[key, *int]
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, v := &key{}, new(int)
			*v = g
			for range 2000 {
				m.Store(k, v)
				if got, ok := m.Take(k); !ok || got != v {
					t.Errorf("goroutine %d took %v, %v; want its own value", g, got, ok)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := m.Len(); n != 0 {
		t.Errorf("Len %d after every take, want 0", n)
	}
}

// BenchmarkHandoff is one request's hand-off: a store and a take, from
// 64 goroutines at once on keys of their own; BenchmarkSyncMap the same
// on a sync.Map, which this package replaced.
func BenchmarkHandoff(b *testing.B) {
	var m Map[key, *int]
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		k, v := &key{}, new(int)
		for pb.Next() {
			m.Store(k, v)
			m.Take(k)
		}
	})
}

func BenchmarkSyncMap(b *testing.B) {
	var m sync.Map
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		k, v := &key{}, new(int)
		for pb.Next() {
			m.Swap(k, v)
			m.LoadAndDelete(k)
		}
	})
}
