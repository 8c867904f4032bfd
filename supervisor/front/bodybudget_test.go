package front

import (
	"testing"
)

// TestBodyBudgetShares: large bodies may take seven eighths of the budget,
// small ones all of it, and released bytes can be taken again.
func TestBodyBudgetShares(t *testing.T) {
	var b bodyBudget
	const limit = 64 << 20
	if !b.reserve(56<<20, 56<<20, limit) {
		t.Fatal("a 56 MiB body refused from an empty 64 MiB budget")
	}
	if b.reserve(2<<20, 2<<20, limit) {
		t.Fatal("a 2 MiB (large) body took part of the eighth kept for small bodies")
	}
	for i := range 8 {
		if !b.reserve(1<<20, 1<<20, limit) {
			t.Fatalf("small body %d refused with %d bytes in use", i, b.inUse())
		}
	}
	if b.reserve(1, 1, limit) {
		t.Fatal("a byte over the full budget was taken")
	}
	b.release(8<<20, 0)
	b.release(56<<20, 56<<20)
	if b.inUse() != 0 {
		t.Fatalf("%d bytes in use after every release", b.inUse())
	}
	if !b.reserve(56<<20, 56<<20, limit) {
		t.Fatal("released bytes could not be reserved again")
	}
}
