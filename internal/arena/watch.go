package arena

import "time"

// Watch intervals: the state word is cheap to read; the claimer's
// liveness costs a read of /proc.
const (
	watchTick     = 5 * time.Millisecond
	livenessEvery = 4 // ticks
)

// settled frees t's slot if its state proves nobody will touch it again:
// Done by its claimer, or claimed by a process that is dead. It reports
// whether the slot was freed.
func (a *Arena) settled(t Ticket) bool {
	w := a.load(t.Slot)
	if w.seq() != t.Seq {
		return false // not ours to judge: leave it to the backstop
	}
	switch w.state() {
	case Done:
		a.release(t.Slot)
		return true
	case Claimed:
		if processGone(w.pid(), a.claimerStart(t.Slot).Load()) == gone {
			a.owner.reclaimed.Add(1)
			a.release(t.Slot)
			return true
		}
	}
	return false
}

// watch waits until t's slot is settled. The backstop counts only while
// the claimer's liveness is unknown: a claimer that is provably alive is
// still working on the slot (or hung, and the master will kill it), and
// freeing the slot under it would let its reply overwrite another
// request's tensors.
func (a *Arena) watch(t Ticket, backstop time.Duration) {
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	var unknownFor time.Duration
	for n := 1; ; n++ {
		select {
		case <-a.owner.stop:
			return
		case <-tick.C:
		}
		w := a.load(t.Slot)
		if w.state() == Done && w.seq() == t.Seq {
			a.release(t.Slot)
			return
		}
		if n%livenessEvery != 0 {
			continue
		}
		if w.state() == Claimed && w.seq() == t.Seq {
			switch processGone(w.pid(), a.claimerStart(t.Slot).Load()) {
			case gone:
				a.owner.reclaimed.Add(1)
				a.release(t.Slot)
				return
			case alive:
				unknownFor = 0
				continue
			}
		}
		if unknownFor += livenessEvery * watchTick; unknownFor >= backstop {
			a.owner.backstops.Add(1)
			a.release(t.Slot)
			return
		}
	}
}
