package shm

import (
	"strings"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// LayoutVersion is the version of the file layout this package reads and
// writes. Boards of any other version are refused with ErrVersion.
const LayoutVersion = 3

// magic spells "SCOREBRD" in the file (little-endian).
const magic uint64 = 0x44524245524f4353

const (
	headerSize = int(unsafe.Sizeof(headerLayout{}))
	slotSize   = int(unsafe.Sizeof(slotLayout{}))
	slotWords  = slotSize / 8

	// MaxSlots bounds the slot count of a board (1 MiB of slots).
	MaxSlots = 1024
)

// The file layout (version 3):
//
// All integers are 64-bit words in the host's byte order (little-endian on
// amd64 and arm64; the board never leaves the host), except the four 32-bit
// size fields. Times are Unix nanoseconds, 0 meaning unset. The header is
// 128 bytes; slot i starts at 128 + i*4096.
//
//	header                        slot (4096 bytes)
//	  0 magic "SCOREBRD"            0 seq (seqlock)     512 latency buckets [20]
//	  8 version uint32              8 state             672 latency sum (ns)
//	 12 header size uint32         16 pid               680 queue-time buckets [20]
//	 16 slot size uint32           24 generation        840 queue-time sum (ns)
//	 20 slot count uint32          32 recycle after     848 batch-size buckets [10]
//	 24 master pid                 40 spawned           928 batch-size sum
//	 32 generation                 48 ready             936 reserved
//	 40 master start               56 heartbeat
//	 48 log level                  64 requests
//	 56 reserved                   72 in-flight
//	                               80 errors
//	                               88 queue depth
//	                               96 arena slots
//	                              104 arena slots in use
//	                              112 arena full since
//	                              120 arena full count
//	                              128 role   [16]byte
//	                              144 name   [48]byte
//	                              192 models [128]byte (comma-separated)
//	                              320 device [64]byte
//	                              384 cpus   [128]byte
//	                             1024 per-model counters [MaxModels], 128 bytes each:
//	                                    0 success        48 queue count
//	                                    8 failures [4]   56 queue ns
//	                                   40 request ns     64 inferences (rows)
//	                                   72 executions     80 compute input ns
//	                                   88 compute infer  96 compute output ns
//	                             2048 work record (work.go):
//	                                    0 missed         8 entries [255]:
//	                                                       unit<<48 | token
//
// The header's log level (the level every worker logs at, set by the
// master: POST /v2/logging) took the first reserved header word without a
// version bump: zero still means "none set", so readers of either age
// agree.
// Version 3 added the work record: the requests a worker is working on
// now (an infer worker's model runs, a prep worker's decodes), which the
// master reads after a crash to blame only those.
// Version 2 added the per-model counters (Triton's per-model statistics:
// failures by reason, inference and execution counts, queue and compute
// durations, each a running total). The arena words (a prep worker's
// shared-memory arena: its slot count, slots in use, since when every slot
// has been in use, and the requests turned away for want of one) took the
// four words reserved at 96 without a version bump: they were zero, and
// zero still means "no arena", so readers of either age agree.
//
// Strings are NUL-padded and truncated (at a UTF-8 boundary) to their field.
// Histogram buckets are non-cumulative counters, the last one catching
// everything above the largest bound; see LatencyBounds and
// BatchSizeBounds. Any change to this layout must bump LayoutVersion.
//
// Soundness of the atomics: // The fields are accessed through unsafe pointers into the mapping. This is
// sound because mmap returns page-aligned memory, the header size and slot
// size are multiples of 8 and every field offset is a multiple of 8, so every
// 64-bit word is naturally aligned; the memory is outside the Go heap, so the
// garbage collector never moves it. Atomic instructions on shared mappings
// are coherent across processes on the same host.

// headerLayout is the board header as it lies in the file. The four size
// fields, the magic, the master pid and the start time are written once,
// before the file is visible under its name; the generation changes with
// atomics.
type headerLayout struct {
	magic      uint64
	version    uint32
	headerSize uint32
	slotSize   uint32
	slotCount  uint32
	masterPID  int64
	generation uint64
	startNanos int64
	logLevel   int64 // logLevelSet | level (a zerolog.Level); 0 = none set
	_          [9]uint64
}

// slotLayout is one worker's slot as it lies in the file. Every word is
// accessed with sync/atomic.
type slotLayout struct {
	seq            uint64 // odd while Claim writes
	state          uint64
	pid            int64
	generation     uint64
	recycleAfter   uint64
	spawnedNanos   int64
	readyNanos     int64
	heartbeatNanos int64
	requests       uint64
	inflight       int64
	errors         uint64
	queueDepth     int64
	arenaSlots     int64 // prep workers: slots in the shared-memory arena; 0 = none
	arenaInUse     int64
	arenaFullSince int64 // Unix ns since every slot has been in use; 0 while one is free
	arenaFull      uint64
	role           [2]uint64
	name           [6]uint64
	models         [16]uint64
	device         [8]uint64
	cpus           [16]uint64
	latency        [latencyBuckets]uint64
	latencySum     uint64 // nanoseconds
	queueTime      [latencyBuckets]uint64
	queueTimeSum   uint64 // nanoseconds
	batchSize      [batchBuckets]uint64
	batchSizeSum   uint64
	_              [11]uint64
	perModel       [MaxModels]modelLayout
	work           workLayout // requests at work (work.go)
}

// MaxModels is how many of a worker's models get their own counters in its
// slot (the first MaxModels of Identity.Models); requests for the others
// count only in the slot's totals.
const MaxModels = 8

// modelLayout is one model's counters inside a slot, in the shape of
// Triton's per-model statistics. Durations are nanoseconds, summed per
// request (a request in a batch is charged the whole batch's compute).
type modelLayout struct {
	success       uint64
	failures      [failureReasons]uint64 // by Failure, Rejected first
	requestNanos  uint64                 // successful requests
	queueCount    uint64
	queueNanos    uint64
	inferences    uint64 // rows run successfully
	executions    uint64 // batches run successfully
	computeInput  uint64
	computeInfer  uint64
	computeOutput uint64
	_             [3]uint64
}

// words views a slot as its 64-bit words, for copying and zeroing.
func (l *slotLayout) words() *[slotWords]uint64 {
	return (*[slotWords]uint64)(unsafe.Pointer(l))
}

// storeString writes s, NUL-padded, into a string field one word at a time.
// s is truncated at a UTF-8 boundary to fit.
func storeString(field []uint64, s string) {
	s = fit(s, len(field)*8)
	for w := range field {
		var word uint64
		for k := 0; k < 8; k++ {
			if i := w*8 + k; i < len(s) {
				word |= uint64(s[i]) << (8 * k)
			}
		}
		atomic.StoreUint64(&field[w], word)
	}
}

// loadString decodes a string field from a (copied) slot.
func loadString(field []uint64) string {
	var b strings.Builder
	for _, word := range field {
		for k := 0; k < 8; k++ {
			c := byte(word >> (8 * k))
			if c == 0 {
				return b.String()
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// fit truncates s to at most n bytes without splitting a rune.
func fit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
