package batch

import "slices"

// Add adds o's counters to s, for statistics summed over the Batchers of
// one model in several processes: counts and durations add up, batch sizes
// merge, LastInference is the later one and QueueDepth the total waiting.
func (s *Stats) Add(o Stats) {
	s.LastInference = max(s.LastInference, o.LastInference)
	s.InferenceCount += o.InferenceCount
	s.ExecutionCount += o.ExecutionCount
	s.InferenceStats.add(&o.InferenceStats)
	for _, ob := range o.BatchStats {
		i, found := slices.BinarySearchFunc(s.BatchStats, ob.BatchSize, func(b BatchStats, n int) int { return b.BatchSize - n })
		if !found {
			s.BatchStats = slices.Insert(s.BatchStats, i, BatchStats{BatchSize: ob.BatchSize})
		}
		b := &s.BatchStats[i]
		b.ComputeInput.plus(ob.ComputeInput)
		b.ComputeInfer.plus(ob.ComputeInfer)
		b.ComputeOutput.plus(ob.ComputeOutput)
	}
	s.QueueDepth += o.QueueDepth
	s.QueueFull += o.QueueFull
	s.Dropped += o.Dropped
}

func (is *InferenceStats) add(o *InferenceStats) {
	is.Success.plus(o.Success)
	is.Fail.plus(o.Fail)
	is.Queue.plus(o.Queue)
	is.ComputeInput.plus(o.ComputeInput)
	is.ComputeInfer.plus(o.ComputeInfer)
	is.ComputeOutput.plus(o.ComputeOutput)
	is.CacheHit.plus(o.CacheHit)
	is.CacheMiss.plus(o.CacheMiss)
}

func (d *Duration) plus(o Duration) {
	d.Count += o.Count
	d.NS += o.NS
}
