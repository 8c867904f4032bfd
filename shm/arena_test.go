package shm

import (
	"testing"
	"time"
)

// TestArenaFieldsRoundTrip: a prep worker's arena words reach a snapshot,
// FullFor measures from FullSince, and Claim zeroes them for the next
// worker.
func TestArenaFieldsRoundTrip(t *testing.T) {
	b := newBoard(t, 1)
	s := b.Slot(0)
	s.Claim(Identity{Role: "prep", Name: "prep-0"})
	since := time.Unix(1700000000, 0)
	s.SetArena(64, 64, since)
	s.ArenaFull()
	s.ArenaFull()
	got := b.SlotSnapshot(0).Arena
	if got.Slots != 64 || got.InUse != 64 || !got.FullSince.Equal(since) || got.Full != 2 {
		t.Fatalf("arena = %+v, want 64/64 full since %v, 2 turned away", got, since)
	}
	if d := got.FullFor(since.Add(3 * time.Second)); d != 3*time.Second {
		t.Fatalf("FullFor = %s, want 3s", d)
	}
	s.SetArena(64, 10, time.Time{})
	if d := b.SlotSnapshot(0).Arena.FullFor(time.Now()); d != 0 {
		t.Fatalf("FullFor with free slots = %s, want 0", d)
	}
	s.Claim(Identity{Role: "prep", Name: "prep-0"})
	if got := b.SlotSnapshot(0).Arena; got != (ArenaSnapshot{}) {
		t.Fatalf("arena after re-Claim = %+v, want zero", got)
	}
}
