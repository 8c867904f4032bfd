package budget

import "testing"

// BenchmarkReserveRelease: one goroutine reserving and releasing bytes
// in a lane within another (two rooms to check).
func BenchmarkReserveRelease(b *testing.B) {
	bu, _, _, answers := lanes()
	for b.Loop() {
		c, err := bu.Reserve(10, answers)
		if err != nil {
			b.Fatal(err)
		}
		c.Release()
	}
}

// BenchmarkReserveGrowReleaseParallel: every P reserving, growing and
// releasing in the same lane: the budget's one lock contended.
func BenchmarkReserveGrowReleaseParallel(b *testing.B) {
	large := &Lane{Name: "large", Room: 1 << 40}
	bu := New(large)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := bu.Reserve(10, large)
			if err != nil {
				b.Error(err)
				return
			}
			_ = c.Grow(20)
			c.Release()
		}
	})
}
