package arena

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrFull means no slot became free before the deadline.
	ErrFull = errors.New("shared-memory arena full")
	// ErrExpired means the deadline had passed before Acquire was
	// called: no slot was taken for work nobody waits for.
	ErrExpired = errors.New("deadline passed before a shared-memory slot was taken")
)

// Acquire takes a free slot for one exchange, waiting for one until
// deadline (backpressure): ErrFull after that; ErrExpired, at once and
// without a slot, when the deadline has already passed. The slot is Sent
// under a new sequence number; write the request frame into Buf, send the
// Ref and Ticket, then Settle the Ticket.
func (a *Arena) Acquire(deadline time.Time) (Ticket, error) {
	o := a.owner
	wait := time.Until(deadline)
	if wait <= 0 {
		return Ticket{}, ErrExpired
	}
	select {
	case <-o.avail:
	default:
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-o.avail:
		case <-t.C:
			return Ticket{}, ErrFull
		}
	}
	o.mu.Lock()
	i := o.stack[len(o.stack)-1]
	o.stack = o.stack[:len(o.stack)-1]
	if o.inUse.Add(1) == int64(a.slots) {
		o.fullSince.Store(time.Now().UnixNano())
	}
	o.mu.Unlock()
	seq := a.load(i).seq() + 1
	a.claimerStart(i).Store(0)
	a.word(i).Store(uint64(makeWord(Sent, 0, seq)))
	return Ticket{Slot: i, Seq: seq}, nil
}

// release returns slot i to the free list.
func (a *Arena) release(i int) {
	o := a.owner
	a.word(i).Store(uint64(makeWord(Free, 0, a.load(i).seq())))
	o.mu.Lock()
	o.fullSince.Store(0)
	o.inUse.Add(-1)
	o.stack = append(o.stack, i)
	o.mu.Unlock()
	o.avail <- struct{}{}
}

// ErrNotDone means a reply was read from a slot its infer worker has not
// marked Done: the reply cannot be trusted.
var ErrNotDone = errors.New("the infer worker has not finished with the slot")

// Reply is the reply frame of n bytes the infer worker wrote into t's
// slot. It aliases the slot: copy it before Settle.
func (a *Arena) Reply(t Ticket, n int) ([]byte, error) {
	if err := a.Check(t.Slot); err != nil {
		return nil, err
	}
	if w := a.load(t.Slot); w.state() != Done || w.seq() != t.Seq {
		return nil, fmt.Errorf("%w: slot %d is %v", ErrNotDone, t.Slot, w.state())
	}
	return a.Frame(t.Slot, n)
}

// Settle ends t's exchange, whatever happened to it; call it exactly once
// per Ticket. A slot no infer worker claimed is revoked (after that no
// infer worker can claim it) and freed at once, as is a slot whose infer
// worker marked it Done. A claimed slot is freed when its claimer marks it
// Done or is found dead; only when the claimer's liveness cannot be read
// at all is it freed after backstop, the longest an infer worker can hold
// a request.
func (a *Arena) Settle(t Ticket, backstop time.Duration) {
	i := t.Slot
	if a.cas(i, makeWord(Sent, 0, t.Seq), makeWord(Free, 0, t.Seq)) {
		a.release(i)
		return
	}
	if a.settled(t) {
		return
	}
	o := a.owner
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed { // stopping: the memory goes with the process
		return
	}
	o.watchers.Add(1)
	go func() {
		defer o.watchers.Done()
		a.watch(t, backstop)
	}()
}

// Stats are the owner's counters.
type Stats struct {
	Slots, InUse int
	// FullSince is when the last free slot was taken, while none is free;
	// the zero Time otherwise.
	FullSince time.Time
	// Reclaimed counts slots freed because their claimer died;
	// Backstopped, those freed by the backstop grace.
	Reclaimed, Backstopped uint64
}

// Stats reads the owner's counters.
func (a *Arena) Stats() Stats {
	o := a.owner
	s := Stats{Slots: a.slots, InUse: int(o.inUse.Load()), Reclaimed: o.reclaimed.Load(), Backstopped: o.backstops.Load()}
	if ns := o.fullSince.Load(); ns != 0 {
		s.FullSince = time.Unix(0, ns)
	}
	return s
}
