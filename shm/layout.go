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
	_          [10]uint64
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
