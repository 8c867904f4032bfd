package shm

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readPatience bounds how long a reader retries a slot whose seqlock keeps
// changing or stays odd. A Claim takes well under a microsecond, but its
// thread may be descheduled mid-write on a loaded host; only a master that
// died inside Claim makes a reader wait the full bound (once per snapshot,
// for that one slot).
const readPatience = 100 * time.Millisecond

// spinAttempts are the retries made before yielding and checking the clock.
const spinAttempts = 64

// SlotSnapshot is a copy of one slot, taken without blocking its writers.
// The identity fields all come from the same Claim; each counter is exact
// at some instant during the read.
type SlotSnapshot struct {
	Index int // position on the board
	State State
	PID   int // 0 until the master or worker records it

	Role, Name, Device, CPUs string
	Models                   []string
	Generation               uint64
	RecycleAfter             uint64 // request count that triggers a recycle; 0 never

	Spawned, Ready, Heartbeat time.Time // zero Time: not recorded

	Requests   uint64 // finished requests, failed ones included
	Errors     uint64 // failed requests
	InFlight   int64
	QueueDepth int64

	// Arena is a prep worker's shared-memory arena; zero without one.
	Arena ArenaSnapshot

	Latency   Histogram // seconds, per finished request
	QueueTime Histogram // seconds
	BatchSize Histogram // items per executed batch

	// Models has the per-model counters of the first MaxModels models, in
	// the order of Models; empty when Torn.
	ModelStats []ModelSnapshot

	// Torn is true when no consistent copy could be taken within
	// readPatience (100ms): a Claim was in progress on every attempt, as
	// when the master died inside one. The identity fields are then empty;
	// the counters are still each exact.
	Torn bool
}

// Stale reports whether the slot describes a worker that is gone: it is
// claimed (not Free) and its generation is older than the header's, or its
// pid no longer exists (kill(pid, 0) fails with ESRCH). A pid that has
// been reused by another process is not detected. A process that exited
// but has not been reaped by its parent still exists.
func (s SlotSnapshot) Stale(h Header) bool {
	if s.State == Free {
		return false
	}
	if s.Generation < h.Generation {
		return true
	}
	return s.PID > 0 && !processExists(s.PID)
}

func processExists(pid int) bool {
	return !errors.Is(unix.Kill(pid, 0), syscall.ESRCH)
}

// snapshot copies the slot under its seqlock and decodes the copy.
func (s *Slot) snapshot(index int) SlotSnapshot {
	var c slotLayout
	src, dst := s.l.words(), c.words()
	torn := true
	var deadline time.Time
	for attempt := 1; ; attempt++ {
		seq := atomic.LoadUint64(&src[0])
		if seq&1 == 0 {
			for i := 1; i < len(dst); i++ {
				dst[i] = atomic.LoadUint64(&src[i])
			}
			if atomic.LoadUint64(&src[0]) == seq {
				torn = false
				break
			}
		}
		if attempt < spinAttempts {
			continue
		}
		runtime.Gosched()
		if attempt == spinAttempts {
			deadline = time.Now().Add(readPatience)
		} else if attempt%spinAttempts == 0 && time.Now().After(deadline) {
			break
		}
	}
	if torn {
		for i := 1; i < len(dst); i++ {
			dst[i] = atomic.LoadUint64(&src[i])
		}
	}
	return decode(index, &c, torn)
}

// decode turns a private copy of a slot into a snapshot.
func decode(index int, c *slotLayout, torn bool) SlotSnapshot {
	snap := SlotSnapshot{
		Index:        index,
		State:        State(c.state),
		PID:          int(c.pid),
		Generation:   c.generation,
		RecycleAfter: c.recycleAfter,
		Spawned:      timeOf(c.spawnedNanos),
		Ready:        timeOf(c.readyNanos),
		Heartbeat:    timeOf(c.heartbeatNanos),
		Requests:     c.requests,
		Errors:       c.errors,
		InFlight:     c.inflight,
		QueueDepth:   c.queueDepth,
		Latency:      latencyHistogram(c.latency[:], c.latencySum),
		QueueTime:    latencyHistogram(c.queueTime[:], c.queueTimeSum),
		BatchSize:    batchHistogram(c.batchSize[:], c.batchSizeSum),
		Torn:         torn,
	}
	snap.Arena = ArenaSnapshot{Slots: c.arenaSlots, InUse: c.arenaInUse,
		FullSince: timeOf(c.arenaFullSince), Full: c.arenaFull}
	if torn {
		return snap
	}
	snap.Role = loadString(c.role[:])
	snap.Name = loadString(c.name[:])
	snap.Device = loadString(c.device[:])
	snap.CPUs = loadString(c.cpus[:])
	if m := loadString(c.models[:]); m != "" {
		snap.Models = strings.Split(m, ",")
	}
	for i, name := range snap.Models[:min(len(snap.Models), MaxModels)] {
		snap.ModelStats = append(snap.ModelStats, decodeModel(name, &c.perModel[i]))
	}
	return snap
}

// ArenaSnapshot is a prep worker's shared-memory arena (see
// internal/arena): Slots is 0 when it has none.
type ArenaSnapshot struct {
	Slots, InUse int64
	// FullSince is when its last free slot was taken, while none is free;
	// the zero Time otherwise.
	FullSince time.Time
	// Full counts requests turned away (503) for want of a free slot.
	Full uint64
}

// FullFor is how long every slot has been in use at now; 0 while one is
// free.
func (a ArenaSnapshot) FullFor(now time.Time) time.Duration {
	if a.Slots == 0 || a.FullSince.IsZero() {
		return 0
	}
	return max(now.Sub(a.FullSince), 0)
}
