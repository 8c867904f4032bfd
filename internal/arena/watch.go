package arena

import "time"

// A watcher looks at its slot after watchFirst, then ever less often, up
// to every watchMax: a claimer that died is usually found within a few
// milliseconds, and a long claim (a slow batch) costs a few looks a
// second, not hundreds.
const (
	watchFirst = 2 * time.Millisecond
	watchMax   = 100 * time.Millisecond
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
	timer := time.NewTimer(watchFirst)
	defer timer.Stop()
	var unknownFor time.Duration
	for d := watchFirst; ; d = min(2*d, watchMax) {
		select {
		case <-a.owner.stop:
			return
		case <-timer.C:
		}
		timer.Reset(min(2*d, watchMax))
		if a.settled(t) {
			return
		}
		if w := a.load(t.Slot); w.state() == Claimed && w.seq() == t.Seq &&
			processGone(w.pid(), a.claimerStart(t.Slot).Load()) == alive {
			unknownFor = 0
			continue
		}
		if unknownFor += d; unknownFor >= backstop {
			a.owner.backstops.Add(1)
			a.release(t.Slot)
			return
		}
	}
}
