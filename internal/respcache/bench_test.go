package respcache

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkKey hashes a request of the default model's input size.
func BenchmarkKey(b *testing.B) {
	input := make([]byte, 3*224*224*4)
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		k := NewKeyBuilder("default")
		k.Bytes(input)
		_ = k.Sum()
	}
}

// BenchmarkGetHit and BenchmarkPut move the default model's answer (1000
// FP32 scores) through the segment.
func BenchmarkGetHit(b *testing.B) {
	s := newSegment(b, 64<<20)
	payload := make([]byte, 4000)
	now := time.Now()
	s.Put(key("k"), payload, now, time.Time{})
	buf := make([]byte, 0, len(payload))
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, ok := s.Get(buf[:0], key("k"), now); !ok {
			b.Fatal("miss")
		}
	}
}

func BenchmarkPut(b *testing.B) {
	s := newSegment(b, 64<<20)
	payload := make([]byte, 4000)
	now := time.Now()
	b.SetBytes(int64(len(payload)))
	i := 0
	for b.Loop() {
		s.Put(key(fmt.Sprint(i%1000)), payload, now, time.Time{})
		i++
	}
}
