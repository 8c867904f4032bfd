package shm

import (
	"testing"
	"time"
)

func TestLatencyBucketBoundaries(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want int
	}{
		{-time.Second, 0},
		{0, 0},
		{time.Nanosecond, 0},
		{50 * time.Microsecond, 0},
		{50*time.Microsecond + time.Nanosecond, 1}, // rounds up past the bound
		{100 * time.Microsecond, 1},
		{101 * time.Microsecond, 2},
		{time.Millisecond, 4},
		{time.Millisecond + 1, 5},
		{2500 * time.Microsecond, 5},
		{time.Second, 13},
		{10 * time.Second, 16},
		{10*time.Second + time.Microsecond, 17},
		{30 * time.Second, 17},
		{60 * time.Second, 18},
		{60*time.Second + time.Nanosecond, 19},
		{time.Hour, 19},
	}
	for _, c := range cases {
		if got := latencyBucket(c.d); got != c.want {
			t.Errorf("latencyBucket(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	bounds := LatencyBounds()
	if len(bounds) != latencyBuckets-1 || bounds[0] != 50*time.Microsecond || bounds[len(bounds)-1] != time.Minute {
		t.Errorf("LatencyBounds() = %v, want 19 bounds from 50µs to 1m", bounds)
	}
	for i, b := range bounds {
		if latencyBucket(b) != i || latencyBucket(b+1) != i+1 {
			t.Errorf("bound %v: bucket %d and %d just above, want %d and %d", b, latencyBucket(b), latencyBucket(b+1), i, i+1)
		}
	}
}

func TestBatchBucketBoundaries(t *testing.T) {
	cases := []struct{ n, want int }{
		{-3, 0}, {0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {8, 3}, {9, 4},
		{128, 7}, {129, 8}, {256, 8}, {257, 9}, {1 << 20, 9},
	}
	for _, c := range cases {
		if got := batchBucket(c.n); got != c.want {
			t.Errorf("batchBucket(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	bounds := BatchSizeBounds()
	for i, b := range bounds {
		if batchBucket(b) != i || batchBucket(b+1) != i+1 {
			t.Errorf("bound %d: bucket %d and %d just above, want %d and %d", b, batchBucket(b), batchBucket(b+1), i, i+1)
		}
	}
}

func TestHistogramSnapshot(t *testing.T) {
	b := newBoard(t, 1)
	s := b.Slot(0)
	s.Claim(Identity{Name: "infer-0"})
	for _, d := range []time.Duration{40 * time.Microsecond, 50 * time.Microsecond, 3 * time.Millisecond, 2 * time.Minute} {
		s.RequestStarted()
		s.RequestFinished(d, false)
		s.ObserveQueueTime(d / 2)
	}
	for _, n := range []int{1, 3, 300} {
		s.ObserveBatchSize(n)
	}
	snap := b.SlotSnapshot(0)

	lat := snap.Latency
	if lat.Count() != 4 || lat.Counts[0] != 2 || lat.Counts[6] != 1 || lat.Counts[19] != 1 {
		t.Errorf("latency counts = %v, want 2 in le=50µs, 1 in le=5ms, 1 in +Inf", lat.Counts)
	}
	if want := (40e-6 + 50e-6 + 3e-3 + 120); abs(lat.Sum-want) > 1e-9 {
		t.Errorf("latency sum = %v s, want %v", lat.Sum, want)
	}
	if lat.Bounds[0] != 50e-6 || lat.Bounds[18] != 60 {
		t.Errorf("latency bounds = %v, want 5e-05 .. 60 (seconds)", lat.Bounds)
	}
	if c := lat.Cumulative(); c[0] != 2 || c[5] != 2 || c[6] != 3 || c[18] != 3 {
		t.Errorf("cumulative = %v, want 2 up to le=2.5ms, 3 from le=5ms", c)
	}
	if snap.QueueTime.Count() != 4 || snap.QueueTime.Counts[0] != 2 || snap.QueueTime.Counts[5] != 1 || snap.QueueTime.Counts[18] != 1 {
		t.Errorf("queue time counts = %v, want 2, 1 in le=2.5ms, 1 in le=60s", snap.QueueTime.Counts)
	}
	bs := snap.BatchSize
	if bs.Count() != 3 || bs.Counts[0] != 1 || bs.Counts[2] != 1 || bs.Counts[9] != 1 || bs.Sum != 304 {
		t.Errorf("batch size = %+v, want one each in le=1, le=4, +Inf, sum 304", bs)
	}
	if bs.Bounds[0] != 1 || bs.Bounds[8] != 256 {
		t.Errorf("batch bounds = %v, want 1 .. 256", bs.Bounds)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
