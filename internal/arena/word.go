package arena

import (
	"sync/atomic"
	"unsafe"
)

// State is where a slot is in its exchange.
type State uint8

// Slot states. The infer worker claims a slot (CAS Sent(seq) ->
// Claimed(seq, pid)) before it touches the data and marks it Done(seq)
// when finished, whatever the outcome. The owner settles it: CAS
// Sent(seq) -> Free proves nobody will touch it (revoked); Done frees it;
// Claimed waits for Done or for the claimer's death (liveness.go). An
// infer worker only taken out of the upstream list (recycled, drained) is
// alive and finishes its requests: removal is not death.
const (
	Free    State = iota // the owner's to hand out
	Sent                 // handed out; no infer worker has claimed it yet
	Claimed              // an infer worker (its pid in the word) may use it
	Done                 // the claimer is finished with it
)

// maxPID bounds the pids a state word holds (24 bits); Linux pids stay
// below PID_MAX_LIMIT, 1<<22.
const maxPID = 1<<24 - 1

// word is a slot's state word: bits 0-7 the State, 8-31 the claimer's
// pid, 32-63 the sequence number of the slot's current use. One word, so
// that a single CAS moves state, claimer and sequence together.
type word uint64

func makeWord(s State, pid int, seq uint32) word {
	return word(uint64(s) | uint64(pid&maxPID)<<8 | uint64(seq)<<32)
}

func (w word) state() State { return State(w & 0xff) }
func (w word) pid() int     { return int(w>>8) & maxPID }
func (w word) seq() uint32  { return uint32(w >> 32) }

// slotHeader precedes each slot's data: the state word and the claimer's
// start time (clock ticks since boot, /proc/<pid>/stat field 22), which
// tells a dead claimer from a new process that reuses its pid. 16 bytes
// keep the data 8-byte aligned, as tensor frames need.
const slotHeader = 16

func (a *Arena) word(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&a.mem[a.offset(i)]))
}

func (a *Arena) claimerStart(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&a.mem[a.offset(i)+8]))
}

func (a *Arena) load(i int) word { return word(a.word(i).Load()) }

func (a *Arena) cas(i int, old, new word) bool {
	return a.word(i).CompareAndSwap(uint64(old), uint64(new))
}
