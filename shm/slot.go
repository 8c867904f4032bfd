package shm

import (
	"strings"
	"sync/atomic"
	"time"
)

// Identity is what the master writes into a slot when it claims it for a
// new worker.
type Identity struct {
	Role   string   // "prep", "infer"; at most 16 bytes
	Name   string   // e.g. "infer-0"; at most 48 bytes
	Models []string // model names, stored comma-separated in 128 bytes
	Device string   // "cpu", "cuda:0", a GPU UUID; at most 64 bytes
	CPUs   string   // cpuset list, e.g. "0-3,8"; at most 128 bytes
	// Generation is the master generation that spawned the worker.
	Generation uint64
	// RecycleAfter is the request count at which the worker will be
	// recycled; 0 means never.
	RecycleAfter uint64
	// Spawned is when the master claimed the slot; the zero Time means
	// unknown.
	Spawned time.Time
}

// Slot is one worker's slot on a writable board. Its methods are the
// writers: Claim belongs to the master, the rest to the worker that owns
// the slot. All of them are lock-free; none allocates. A Slot must not be
// used after its Scoreboard is closed.
type Slot struct {
	l *slotLayout
}

// Claim resets the slot for a new worker: it records the identity, pid 0,
// state Starting, and zeroes every counter, histogram and time, all inside
// the slot's seqlock so readers see the old claim or the new one, never a
// mix. Only the master calls Claim, and only while no worker writes to the
// slot (before spawning, after the previous owner exited); two Claims of the
// same slot must not run concurrently.
func (s *Slot) Claim(id Identity) {
	l := s.l
	seq := atomic.LoadUint64(&l.seq)
	if seq&1 == 0 {
		seq++ // odd: write in progress (already odd if a claimer died mid-write)
	}
	atomic.StoreUint64(&l.seq, seq)
	w := l.words()
	for i := 1; i < len(w); i++ {
		atomic.StoreUint64(&w[i], 0)
	}
	storeString(l.role[:], id.Role)
	storeString(l.name[:], id.Name)
	storeString(l.models[:], strings.Join(id.Models, ","))
	storeString(l.device[:], id.Device)
	storeString(l.cpus[:], id.CPUs)
	atomic.StoreUint64(&l.generation, id.Generation)
	atomic.StoreUint64(&l.recycleAfter, id.RecycleAfter)
	atomic.StoreInt64(&l.spawnedNanos, unixNanos(id.Spawned))
	atomic.StoreUint64(&l.state, uint64(Starting))
	atomic.StoreUint64(&l.seq, seq+1)
}

// SetModels rewrites the model names of the identity (Identity.Models)
// of a live worker whose models a reload changed in place, inside the
// slot's seqlock, so readers see the old names or the new. Only the
// master calls it, never concurrently with Claim; the counters stay.
func (s *Slot) SetModels(models []string) {
	l := s.l
	seq := atomic.LoadUint64(&l.seq)
	if seq&1 == 0 {
		seq++
	}
	atomic.StoreUint64(&l.seq, seq)
	storeString(l.models[:], strings.Join(models, ","))
	atomic.StoreUint64(&l.seq, seq+1)
}

// SetPID records the worker's process id (the master after spawning, or
// the worker itself).
func (s *Slot) SetPID(pid int) { atomic.StoreInt64(&s.l.pid, int64(pid)) }

// SetState records the worker's lifecycle state.
func (s *Slot) SetState(st State) { atomic.StoreUint64(&s.l.state, uint64(st)) }

// SetReadyTime records when the worker became ready.
func (s *Slot) SetReadyTime(t time.Time) { atomic.StoreInt64(&s.l.readyNanos, unixNanos(t)) }

// Heartbeat records that the worker was alive at now.
func (s *Slot) Heartbeat(now time.Time) { atomic.StoreInt64(&s.l.heartbeatNanos, unixNanos(now)) }

// RequestStarted counts a request in flight. Every call must be matched by
// one RequestFinished.
func (s *Slot) RequestStarted() { atomic.AddInt64(&s.l.inflight, 1) }

// RequestFinished ends a request started with RequestStarted: it counts the
// request (and the error, if failed) and observes its latency.
func (s *Slot) RequestFinished(latency time.Duration, failed bool) {
	l := s.l
	atomic.AddInt64(&l.inflight, -1)
	atomic.AddUint64(&l.requests, 1)
	if failed {
		atomic.AddUint64(&l.errors, 1)
	}
	atomic.AddUint64(&l.latency[latencyBucket(latency)], 1)
	atomic.AddUint64(&l.latencySum, nonNegative(latency))
}

// SetGeneration records the master generation the worker now serves: a
// reload that kept the worker (its spec did not change) moves it to the
// new generation, so it is not mistaken for a stale one.
func (s *Slot) SetGeneration(g uint64) { atomic.StoreUint64(&s.l.generation, g) }

// AddQueueDepth changes the queue depth by delta, for workers with several
// queues (one per model) that each report their own changes.
func (s *Slot) AddQueueDepth(delta int) { atomic.AddInt64(&s.l.queueDepth, int64(delta)) }

// SetQueueDepth records how many requests wait in the worker's queue.
func (s *Slot) SetQueueDepth(n int) { atomic.StoreInt64(&s.l.queueDepth, int64(n)) }

// ObserveQueueTime records how long a request waited before execution.
func (s *Slot) ObserveQueueTime(d time.Duration) {
	atomic.AddUint64(&s.l.queueTime[latencyBucket(d)], 1)
	atomic.AddUint64(&s.l.queueTimeSum, nonNegative(d))
}

// ObserveBatchSize records the size of an executed batch.
func (s *Slot) ObserveBatchSize(n int) {
	atomic.AddUint64(&s.l.batchSize[batchBucket(n)], 1)
	atomic.AddUint64(&s.l.batchSizeSum, uint64(max(n, 0)))
}

// SetArena records the prep worker's shared-memory arena: its slots, how
// many are in use, and since when every one has been (the zero Time
// while one is free).
func (s *Slot) SetArena(slots, inUse int, fullSince time.Time) {
	atomic.StoreInt64(&s.l.arenaSlots, int64(slots))
	atomic.StoreInt64(&s.l.arenaInUse, int64(inUse))
	atomic.StoreInt64(&s.l.arenaFullSince, unixNanos(fullSince))
}

// ArenaFull counts a request turned away because no arena slot became
// free in time.
func (s *Slot) ArenaFull() { atomic.AddUint64(&s.l.arenaFull, 1) }

func nonNegative(d time.Duration) uint64 { return uint64(max(d, 0)) }

// unixNanos encodes t; the zero Time is 0 (unset).
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf decodes a time word; 0 is the zero Time.
func timeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
