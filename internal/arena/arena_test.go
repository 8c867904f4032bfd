package arena

import (
	"errors"
	"testing"
	"time"
)

// testArena is an owner arena and a peer mapping of it, as an infer worker
// has.
func testArena(t *testing.T, slots, slotBytes int) (owner, peer *Arena) {
	t.Helper()
	owner, err := Create(slots, slotBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close() })
	if peer, err = Open(owner.Ref()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return owner, peer
}

func soon() time.Time { return time.Now().Add(5 * time.Second) }

func TestFramesCrossTheMapping(t *testing.T) {
	owner, peer := testArena(t, 2, 64)
	tk, err := owner.Acquire(soon())
	if err != nil {
		t.Fatal(err)
	}
	frame := append(owner.Buf(tk.Slot), "request frame"...)
	if !owner.Fits(tk.Slot, frame) {
		t.Fatal("a small frame does not fit its slot")
	}
	if err := peer.Claim(tk); err != nil {
		t.Fatal(err)
	}
	got, err := peer.Frame(tk.Slot, len(frame))
	if err != nil || string(got) != "request frame" {
		t.Fatalf("peer read %q, %v", got, err)
	}
	reply := append(peer.Buf(tk.Slot), "reply"...)
	if _, err := owner.Reply(tk, len(reply)); !errors.Is(err, ErrNotDone) {
		t.Fatalf("a reply was read before the infer side finished: %v", err)
	}
	peer.Finish(tk)
	if back, err := owner.Reply(tk, len(reply)); err != nil || string(back) != "reply" {
		t.Fatalf("owner read back %q, %v", back, err)
	}
	if big := append(owner.Buf(tk.Slot), make([]byte, 65)...); owner.Fits(tk.Slot, big) {
		t.Fatal("a frame larger than the slot was taken as fitting")
	}
	if _, err := peer.Frame(tk.Slot, 1<<20); !errors.Is(err, ErrBadRef) {
		t.Fatalf("a frame length beyond the slot: %v, want ErrBadRef", err)
	}
	if _, err := peer.Frame(5, 1); !errors.Is(err, ErrBadRef) {
		t.Fatalf("a slot number beyond the arena: %v, want ErrBadRef", err)
	}
	owner.Settle(tk, time.Minute)
	if s := owner.Stats(); s.InUse != 0 {
		t.Fatalf("%d slots in use after a settled exchange, want 0", s.InUse)
	}
}

func TestFullArenaAppliesBackpressure(t *testing.T) {
	owner, _ := testArena(t, 2, 8)
	a, _ := owner.Acquire(soon())
	if _, err := owner.Acquire(soon()); err != nil {
		t.Fatal(err)
	}
	if s := owner.Stats(); s.InUse != 2 || s.FullSince.IsZero() {
		t.Fatalf("two of two slots taken: stats %+v, want 2 in use and a full-since time", s)
	}
	start := time.Now()
	if _, err := owner.Acquire(time.Now().Add(50 * time.Millisecond)); !errors.Is(err, ErrFull) {
		t.Fatalf("third acquire of two slots: %v, want ErrFull", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("gave up after %s, want the full 50ms wait", waited)
	}
	got := make(chan Ticket, 1)
	go func() {
		tk, err := owner.Acquire(soon())
		if err != nil {
			t.Error(err)
		}
		got <- tk
	}()
	owner.Settle(a, time.Minute)
	select {
	case tk := <-got:
		if tk.Slot != a.Slot || tk.Seq != a.Seq+1 {
			t.Fatalf("the waiter got %v, want slot %d under the next sequence %d", tk, a.Slot, a.Seq+1)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the settled slot")
	}
}

// TestAcquireWithExpiredDeadline: a request whose time is up gets no slot.
func TestAcquireWithExpiredDeadline(t *testing.T) {
	owner, _ := testArena(t, 1, 8)
	for _, d := range []time.Time{time.Now(), time.Now().Add(-time.Second), {}} {
		if tk, err := owner.Acquire(d); !errors.Is(err, ErrExpired) {
			t.Fatalf("Acquire(%v): %v %v, want ErrExpired", d, tk, err)
		}
	}
	if s := owner.Stats(); s.InUse != 0 {
		t.Fatalf("expired acquires left %d slots in use", s.InUse)
	}
	if _, err := owner.Acquire(soon()); err != nil {
		t.Fatalf("the only slot is not free after expired acquires: %v", err)
	}
}

// TestUnclaimedSlotIsRevokedAtOnce: a request that never reached an infer
// worker frees its slot at Settle, and a late infer worker cannot claim
// it, nor a reused slot with the old ticket.
func TestUnclaimedSlotIsRevokedAtOnce(t *testing.T) {
	owner, peer := testArena(t, 1, 8)
	tk, _ := owner.Acquire(soon())
	owner.Settle(tk, time.Hour)
	if s := owner.Stats(); s.InUse != 0 {
		t.Fatalf("an unclaimed slot is still in use after Settle: %+v", s)
	}
	if err := peer.Claim(tk); !errors.Is(err, ErrNotClaimable) {
		t.Fatalf("a revoked slot was claimed: %v", err)
	}
	next, _ := owner.Acquire(soon())
	if err := peer.Claim(tk); !errors.Is(err, ErrNotClaimable) {
		t.Fatalf("a reused slot was claimed with the previous ticket: %v", err)
	}
	if err := peer.Claim(next); err != nil {
		t.Fatalf("the current ticket: %v", err)
	}
}

// TestClaimedSlotWaitsForItsClaimer: a slot claimed by a live infer
// worker is not freed until it says Done, however the prep side's request
// ended.
func TestClaimedSlotWaitsForItsClaimer(t *testing.T) {
	owner, peer := testArena(t, 1, 8)
	tk, _ := owner.Acquire(soon())
	if err := peer.Claim(tk); err != nil {
		t.Fatal(err)
	}
	owner.Settle(tk, 50*time.Millisecond) // the backstop is for unknown liveness only
	if _, err := owner.Acquire(time.Now().Add(300 * time.Millisecond)); !errors.Is(err, ErrFull) {
		t.Fatalf("a slot claimed by a live infer worker was reused: %v", err)
	}
	peer.Finish(tk)
	if _, err := owner.Acquire(soon()); err != nil {
		t.Fatalf("the slot did not come back after Finish: %v", err)
	}
	if s := owner.Stats(); s.Reclaimed != 0 || s.Backstopped != 0 {
		t.Fatalf("stats %+v: the slot came back by Done, not by death or backstop", s)
	}
}

// TestConcurrentUseKeepsCountsExact: many requests acquiring, claiming
// or not, and settling at once leave nothing in use and the arena not
// marked full.
func TestConcurrentUseKeepsCountsExact(t *testing.T) {
	owner, peer := testArena(t, 4, 64)
	done := make(chan error, 16)
	for g := range 16 {
		go func() {
			for n := range 200 {
				tk, err := owner.Acquire(soon())
				if err != nil {
					done <- err
					return
				}
				if (g+n)%2 == 0 {
					if err := peer.Claim(tk); err != nil {
						done <- err
						return
					}
					peer.Finish(tk)
				}
				owner.Settle(tk, time.Minute)
			}
			done <- nil
		}()
	}
	for range 16 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if s := owner.Stats(); s.InUse != 0 || !s.FullSince.IsZero() {
		t.Fatalf("after every exchange settled: %+v, want none in use and not full", s)
	}
}

// TestBackstopOnlyWhenLivenessIsUnknown: a claim whose claimer cannot be
// looked up (here pid 0) is freed after the backstop, and counted as such.
func TestBackstopOnlyWhenLivenessIsUnknown(t *testing.T) {
	owner, _ := testArena(t, 1, 8)
	tk, _ := owner.Acquire(soon())
	owner.word(tk.Slot).Store(uint64(makeWord(Claimed, 0, tk.Seq)))
	start := time.Now()
	owner.Settle(tk, 100*time.Millisecond)
	if _, err := owner.Acquire(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatalf("the slot did not come back after the backstop: %v", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("freed after %s, before the 100ms backstop", took)
	}
	if s := owner.Stats(); s.Backstopped != 1 || s.Reclaimed != 0 {
		t.Fatalf("stats %+v, want one backstopped", s)
	}
}
