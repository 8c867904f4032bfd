package shm

import "sync/atomic"

// A slot's work record is which requests its worker is working on now: an
// infer worker records the requests of each model run it executes, a prep
// worker the request whose body or images it decodes. Each request is
// named by the master's token for it (worker.TokenHeader); the requests
// recorded together are one unit (a run, a decode). The worker writes
// the record before the work starts and clears it after; after the worker
// crashed, the master reads it (Scoreboard.AtWork) to learn which
// requests were being worked on when it died, the only ones the crash can
// be blamed on (supervisor/front poison.go).
//
// Entries are claimed lock-free (a compare-and-swap from 0), so any number
// of the worker's goroutines record at once. A request that finds every
// entry taken is counted in missed instead, so a reader knows the record
// is incomplete rather than believing the request was idle.

// WorkEntries is how many requests a slot records at work at once.
const WorkEntries = 255

// MaxToken is the largest request token a slot records: an entry keeps
// the token in its low 48 bits and the unit in the high 16.
const MaxToken = 1<<48 - 1

// workLayout is a slot's work record as it lies in the file.
type workLayout struct {
	missed  uint64              // requests at work without an entry
	entries [WorkEntries]uint64 // unit<<48 | token; 0 is free
}

// Work is one unit of work recorded by Slot.Begin, until End.
type Work struct {
	l      *slotLayout
	taken  []uint16 // entry indices
	missed uint64
}

// Begin records that the worker now works on the requests tokens, as one
// unit (unit: any number telling this unit from the others at work, such
// as a run counter; only its low 16 bits are kept). Tokens that are 0 (a
// request without one, a warm-up) or over MaxToken are not recorded. The
// caller must End the returned Work once the unit is done. A nil Slot
// records nothing.
func (s *Slot) Begin(unit uint64, tokens ...uint64) Work {
	if s == nil {
		return Work{}
	}
	w := Work{l: s.l}
	e := &s.l.work.entries
	for _, t := range tokens {
		if t == 0 || t > MaxToken {
			continue
		}
		v := unit<<48 | t
		start := int(t * 0x9e3779b97f4a7c15 >> 32 % WorkEntries) // spread: concurrent units rarely meet
		took := false
		for k := range WorkEntries {
			i := (start + k) % WorkEntries
			if atomic.LoadUint64(&e[i]) == 0 && atomic.CompareAndSwapUint64(&e[i], 0, v) {
				w.taken = append(w.taken, uint16(i))
				took = true
				break
			}
		}
		if !took {
			w.missed++
		}
	}
	if w.missed > 0 {
		atomic.AddUint64(&s.l.work.missed, w.missed)
	}
	return w
}

// End clears what Begin recorded.
func (w Work) End() {
	if w.l == nil {
		return
	}
	for _, i := range w.taken {
		atomic.StoreUint64(&w.l.work.entries[i], 0)
	}
	if w.missed > 0 {
		atomic.AddUint64(&w.l.work.missed, -w.missed)
	}
}

// AtWork is a slot's work record as read: the requests its worker was
// working on, by unit.
type AtWork struct {
	// Units holds each unit's tokens, by unit number.
	Units map[uint16][]uint64
	// Missed counts requests at work that found no free entry: with any,
	// a request absent from Units may still have been at work.
	Missed uint64
}

// Unit returns the unit token is recorded in.
func (a AtWork) Unit(token uint64) (uint16, bool) {
	for u, ts := range a.Units {
		for _, t := range ts {
			if t == token {
				return u, true
			}
		}
	}
	return 0, false
}

// AtWork reads slot i's work record. Read after the worker exited, it is
// what the worker was working on when it did.
func (b *Scoreboard) AtWork(i int) AtWork {
	l := b.slots[i].l
	a := AtWork{Missed: atomic.LoadUint64(&l.work.missed)}
	for k := range l.work.entries {
		v := atomic.LoadUint64(&l.work.entries[k])
		if v == 0 {
			continue
		}
		if a.Units == nil {
			a.Units = map[uint16][]uint64{}
		}
		u := uint16(v >> 48)
		a.Units[u] = append(a.Units[u], v&MaxToken)
	}
	return a
}
