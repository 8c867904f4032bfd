package admission

// Heir is a large body waiting for room (a gRPC message at the head
// of grpcfront's line: ClaimBody) that the budget hands room to before
// anyone else may take it. A body that polls for room loses it to the
// smaller ones that take it the moment it frees, for as long as they
// keep coming; while an heir lacks bytes, the room it may take is held
// back from every reserve (claimLocked) and every byte given back goes
// to it first, so it is whole once that much is given back, whatever
// comes after. What it may take is bounded as a large body's reserve
// is: the large bodies, the heir included, hold at most seven eighths
// of the budget, so a large heir that never fills (a hostile client's,
// behind others holding the seven eighths) keeps no small body out of
// the eighth. There is one heir at a time: two bodies each holding part
// of what they need would wait on each other.
type Heir struct {
	b     *BodyBudget
	limit int64 // the budget's limit when it claimed
	held  int64 // under b.mu
	lacks int64 // under b.mu; 0: whole, no longer the heir
}

// Claim makes a large body of n bytes the budget's heir, taking what
// fits now; nil when there is an heir already.
func (b *BodyBudget) Claim(n, limit int64) *Heir {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.heir.Load() != nil {
		return nil
	}
	h := &Heir{b: b, limit: limit, lacks: n}
	b.heir.Store(h)
	b.feedHeirLocked(0)
	return h
}

// claimLocked is the room the heir may take now (0 without one): what
// it lacks, up to what the large bodies may still hold.
func (b *BodyBudget) claimLocked(limit int64) int64 {
	h := b.heir.Load()
	if h == nil {
		return 0
	}
	return max(min(h.lacks, limit-limit/8-b.large.Load()), 0)
}

// feedHeirLocked gives the heir what it may take of the room there is
// once freed bytes are given back, and returns how many of freed it
// took (the rest, if more, it took from free room). The room is taken
// by compare-and-swap, as reserve takes it: a reserve that saw no heir
// (it was claimed meanwhile) does not take mu, and an add after a load
// let both take the same room, past the limit.
func (b *BodyBudget) feedHeirLocked(freed int64) int64 {
	h := b.heir.Load()
	if h == nil {
		return 0
	}
	var give, fromFreed int64
	for {
		used := b.used.Load()
		give = max(min(b.claimLocked(h.limit), h.limit-(used-freed)), 0)
		fromFreed = min(give, freed)
		if b.used.CompareAndSwap(used, used+give-fromFreed) {
			break
		}
	}
	h.held += give
	h.lacks -= give
	b.large.Add(give)
	if h.lacks == 0 {
		b.heir.Store(nil)
	}
	b.burst.Add(give-fromFreed, bodyBurst)
	return fromFreed
}

// Settle takes what fits now and reports whether the body is whole: its
// bytes are then held as a reserve's are (give them back with release).
func (h *Heir) Settle() bool {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if h.lacks > 0 {
		h.b.feedHeirLocked(0)
	}
	return h.lacks == 0
}

// Cancel ends the claim of a body not yet whole, giving back what it
// holds.
func (h *Heir) Cancel() {
	h.b.mu.Lock()
	h.b.heir.CompareAndSwap(h, nil)
	held := h.held
	h.held, h.lacks = 0, 0
	h.b.mu.Unlock()
	h.b.Release(held, held)
}
