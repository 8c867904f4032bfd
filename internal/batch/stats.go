package batch

import (
	"slices"
	"sync"
	"time"
)

// Duration is a count of events and their total duration, as Triton's
// statistics report each phase: {"count": ..., "ns": ...}.
type Duration struct {
	Count uint64 `json:"count"`
	NS    uint64 `json:"ns"`
}

func (d *Duration) add(t time.Duration) {
	d.Count++
	d.NS += uint64(max(t, 0))
}

// InferenceStats are per-request totals, in the shape of Triton's
// inference_stats. A request in a batch is charged the whole batch's
// compute times, as Triton does.
type InferenceStats struct {
	// Success and Fail count every Submit exactly once, with the time it
	// took; Fail includes rejected, timed-out and invalid requests.
	Success Duration `json:"success"`
	Fail    Duration `json:"fail"`
	// Queue is the time requests waited before their batch started.
	Queue Duration `json:"queue"`
	// ComputeInput is concatenation, ComputeInfer the model run and
	// ComputeOutput splitting, for requests whose batch succeeded.
	ComputeInput  Duration `json:"compute_input"`
	ComputeInfer  Duration `json:"compute_infer"`
	ComputeOutput Duration `json:"compute_output"`
	// CacheHit and CacheMiss are the response cache's lookups ({count,
	// ns}); the batcher leaves them zero (a cached request never reaches
	// it) and the prep worker fills them from the model's cache.
	CacheHit  Duration `json:"cache_hit"`
	CacheMiss Duration `json:"cache_miss"`
}

// BatchStats are the totals for one formed batch size, as in Triton's
// batch_stats; Count is the number of batches of that size.
type BatchStats struct {
	BatchSize     int      `json:"batch_size"`
	ComputeInput  Duration `json:"compute_input"`
	ComputeInfer  Duration `json:"compute_infer"`
	ComputeOutput Duration `json:"compute_output"`
}

// Stats is a snapshot of one Batcher's counters since New.
type Stats struct {
	// LastInference is when the last successful batch finished, in
	// milliseconds since the Unix epoch, as Triton's last_inference; 0
	// means never.
	LastInference int64 `json:"last_inference"`
	// InferenceCount is the rows run and ExecutionCount the batches run,
	// successfully; their ratio is the mean batch size.
	InferenceCount uint64         `json:"inference_count"`
	ExecutionCount uint64         `json:"execution_count"`
	InferenceStats InferenceStats `json:"inference_stats"`
	// BatchStats has one entry per batch size formed, ascending. With
	// batching off every run counts as size 1.
	BatchStats []BatchStats `json:"batch_stats"`
	// QueueDepth is the number of requests waiting now.
	QueueDepth int `json:"queue_depth"`
	// QueueFull counts requests refused with ErrQueueFull; Dropped counts
	// requests that left the queue unrun because their context ended or
	// their deadline passed.
	QueueFull uint64 `json:"queue_full"`
	Dropped   uint64 `json:"dropped"`
}

// Stats returns a snapshot of the statistics.
func (b *Batcher) Stats() Stats {
	s := b.stats.snapshot()
	s.QueueDepth = int(b.depth.Load())
	return s
}

// recorder accumulates statistics from Submit, the loop and the batches.
type recorder struct {
	mu      sync.Mutex
	s       Stats
	batches map[int]*BatchStats
}

func (r *recorder) init() { r.batches = make(map[int]*BatchStats) }

func (r *recorder) request(ok bool, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.s.InferenceStats.Success.add(d)
	} else {
		r.s.InferenceStats.Fail.add(d)
	}
}

func (r *recorder) queueFull() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.QueueFull++
}

func (r *recorder) dropped(n int) {
	if n == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.Dropped += uint64(n)
}

// batch records one batch of rows that left the queue at dispatched and
// spent compute (input, infer, output) running.
func (r *recorder) batch(items []*pending, rows int, dispatched time.Time, ok bool, compute [3]time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	is := &r.s.InferenceStats
	for _, p := range items {
		is.Queue.add(dispatched.Sub(p.enqueued))
		if ok {
			is.ComputeInput.add(compute[0])
			is.ComputeInfer.add(compute[1])
			is.ComputeOutput.add(compute[2])
		}
	}
	if !ok {
		return
	}
	r.s.InferenceCount += uint64(rows)
	r.s.ExecutionCount++
	r.s.LastInference = dispatched.Add(compute[0] + compute[1] + compute[2]).UnixMilli()
	bs := r.batches[rows]
	if bs == nil {
		bs = &BatchStats{BatchSize: rows}
		r.batches[rows] = bs
	}
	bs.ComputeInput.add(compute[0])
	bs.ComputeInfer.add(compute[1])
	bs.ComputeOutput.add(compute[2])
}

func (r *recorder) snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	s.BatchStats = make([]BatchStats, 0, len(r.batches))
	for _, bs := range r.batches {
		s.BatchStats = append(s.BatchStats, *bs)
	}
	slices.SortFunc(s.BatchStats, func(a, b BatchStats) int { return a.BatchSize - b.BatchSize })
	return s
}
