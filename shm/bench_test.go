package shm

import (
	"testing"
	"time"
)

func BenchmarkRequest(b *testing.B) {
	board := newBoard(b, 1)
	s := board.Slot(0)
	s.Claim(Identity{Name: "bench"})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.RequestStarted()
		s.RequestFinished(time.Duration(i&0xffff)*time.Microsecond, false)
	}
}

func BenchmarkRequestParallel(b *testing.B) {
	board := newBoard(b, 1)
	s := board.Slot(0)
	s.Claim(Identity{Name: "bench"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.RequestStarted()
			s.RequestFinished(3*time.Millisecond, false)
		}
	})
}

func BenchmarkSnapshot(b *testing.B) {
	board := newBoard(b, 64)
	b.ReportAllocs()
	for b.Loop() {
		board.Snapshot()
	}
}
