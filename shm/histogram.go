package shm

import (
	"math/bits"
	"time"
)

// Bucket layout of the histograms. Bounds are inclusive upper bounds
// (Prometheus "le"); one extra bucket counts everything above the largest.
const (
	latencyBuckets = 20 // 19 bounds, 50µs .. 60s, then +Inf
	batchBuckets   = 10 // 9 bounds, 1 .. 256, then +Inf
)

// latencyBoundMicros returns the upper bound of latency bucket i in
// microseconds: a 1-2.5-5 series from 50µs to 10s, then 30s and 60s.
// The last bucket (i == latencyBuckets-1) has no bound.
func latencyBoundMicros(i int) uint64 {
	switch i {
	case 0:
		return 50
	case 1:
		return 100
	case 2:
		return 250
	case 3:
		return 500
	case 4:
		return 1_000
	case 5:
		return 2_500
	case 6:
		return 5_000
	case 7:
		return 10_000
	case 8:
		return 25_000
	case 9:
		return 50_000
	case 10:
		return 100_000
	case 11:
		return 250_000
	case 12:
		return 500_000
	case 13:
		return 1_000_000
	case 14:
		return 2_500_000
	case 15:
		return 5_000_000
	case 16:
		return 10_000_000
	case 17:
		return 30_000_000
	case 18:
		return 60_000_000
	}
	panic("shm: latency bucket out of range")
}

// LatencyBounds returns the upper bounds of the latency and queue-time
// histograms: 50µs, 100µs, 250µs, 500µs, 1ms, 2.5ms, 5ms, 10ms, 25ms, 50ms,
// 100ms, 250ms, 500ms, 1s, 2.5s, 5s, 10s, 30s, 60s. A duration d lands in
// the first bucket whose bound is >= d, or in the overflow bucket.
func LatencyBounds() []time.Duration {
	b := make([]time.Duration, latencyBuckets-1)
	for i := range b {
		b[i] = time.Duration(latencyBoundMicros(i)) * time.Microsecond
	}
	return b
}

// BatchSizeBounds returns the upper bounds of the batch-size histogram:
// 1, 2, 4, 8, 16, 32, 64, 128, 256. A batch of n lands in the first bucket
// whose bound is >= n, or in the overflow bucket.
func BatchSizeBounds() []int {
	b := make([]int, batchBuckets-1)
	for i := range b {
		b[i] = 1 << i
	}
	return b
}

// latencyBucket returns the bucket for d. A duration that is not a whole
// number of microseconds rounds up, so d <= bound holds exactly.
func latencyBucket(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	us := (uint64(d) + 999) / 1000
	for i := 0; i < latencyBuckets-1; i++ {
		if us <= latencyBoundMicros(i) {
			return i
		}
	}
	return latencyBuckets - 1
}

// batchBucket returns the bucket for a batch of n (n <= 1 is bucket 0).
func batchBucket(n int) int {
	if n <= 1 {
		return 0
	}
	return min(bits.Len64(uint64(n-1)), batchBuckets-1)
}

// Histogram is a snapshot of one histogram, ready to become a Prometheus
// histogram: Bounds[i] is the inclusive upper bound of Counts[i], and the
// last count (Counts[len(Bounds)]) is the +Inf bucket. Counts are
// per-bucket, not cumulative.
type Histogram struct {
	// Bounds are in seconds for latency and queue time, in items for
	// batch size.
	Bounds []float64
	Counts []uint64
	// Sum of the observed values, in the unit of Bounds.
	Sum float64
}

// Count returns the number of observations: the sum of Counts, so it
// always equals the +Inf cumulative bucket even while writers are busy.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Cumulative returns the cumulative count at each bound (Prometheus
// buckets), without the +Inf bucket, which is Count.
func (h Histogram) Cumulative() []uint64 {
	c := make([]uint64, len(h.Bounds))
	var n uint64
	for i := range c {
		n += h.Counts[i]
		c[i] = n
	}
	return c
}

func latencyHistogram(buckets []uint64, sumNanos uint64) Histogram {
	h := Histogram{Bounds: make([]float64, latencyBuckets-1), Counts: append([]uint64(nil), buckets...)}
	for i := range h.Bounds {
		h.Bounds[i] = float64(latencyBoundMicros(i)) / 1e6
	}
	h.Sum = float64(sumNanos) / 1e9
	return h
}

func batchHistogram(buckets []uint64, sum uint64) Histogram {
	h := Histogram{Bounds: make([]float64, batchBuckets-1), Counts: append([]uint64(nil), buckets...)}
	for i := range h.Bounds {
		h.Bounds[i] = float64(int(1) << i)
	}
	h.Sum = float64(sum)
	return h
}
