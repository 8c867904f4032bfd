package admission

import (
	"testing"
)

// TestBodyBudgetShares: large bodies may take seven eighths of the budget,
// small ones all of it, and released bytes can be taken again.
func TestBodyBudgetShares(t *testing.T) {
	var b BodyBudget
	const limit = 64 << 20
	if !b.Reserve(56<<20, 56<<20, limit) {
		t.Fatal("a 56 MiB body refused from an empty 64 MiB budget")
	}
	if b.Reserve(2<<20, 2<<20, limit) {
		t.Fatal("a 2 MiB (large) body took part of the eighth kept for small bodies")
	}
	for i := range 8 {
		if !b.Reserve(1<<20, 1<<20, limit) {
			t.Fatalf("small body %d refused with %d bytes in use", i, b.InUse())
		}
	}
	if b.Reserve(1, 1, limit) {
		t.Fatal("a byte over the full budget was taken")
	}
	b.Release(8<<20, 0)
	b.Release(56<<20, 56<<20)
	if b.InUse() != 0 {
		t.Fatalf("%d bytes in use after every release", b.InUse())
	}
	if !b.Reserve(56<<20, 56<<20, limit) {
		t.Fatal("released bytes could not be reserved again")
	}
}

// TestHeldAnswersLeaveTheSmallBodiesEighth: answers held for a client
// that never reads them, each just under 1 MiB (a "small" size), fill at
// most seven eighths of the budget, so a small request body still finds
// room; and giving them back leaves the budget and its large count at 0.
// Reserved as small bodies, 8 of them filled an 8 MiB budget and every
// request was refused (cmd/hostile grpc-unread-large).
func TestHeldAnswersLeaveTheSmallBodiesEighth(t *testing.T) {
	const limit, answer = 8 << 20, SmallBodyBytes - 4096
	var b BodyBudget
	held := 0
	for held < 16 && b.ReserveAnswer(answer, limit) {
		held++
	}
	if used := b.InUse(); used > limit-limit/8 {
		t.Errorf("%d held answers take %d bytes, more than the large bodies' seven eighths (%d)", held, used, limit-limit/8)
	}
	if !b.Reserve(64<<10, 64<<10, limit) {
		t.Fatalf("with %d answers held (%d bytes), a 64 KiB request body found no room", held, b.InUse())
	}
	b.Release(64<<10, 0)
	for ; held > 0; held-- {
		b.ReleaseAnswer(answer)
	}
	if b.InUse() != 0 || b.large.Load() != 0 {
		t.Errorf("after the answers were given back: %d bytes in use, %d large, want 0 and 0", b.InUse(), b.large.Load())
	}
}
