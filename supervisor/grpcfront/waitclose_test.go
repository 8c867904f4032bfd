package grpcfront

import (
	"errors"
	"slices"
	"testing"
)

// A connection that closes (its client gone, the server stopping) while
// its message heads the line and holds a claim gives the claim back and
// leaves the line: the next message in line claims, rather than wait
// behind a connection that is no more.
func TestWaitLineHeadClosedGivesItsClaimBack(t *testing.T) {
	b := &claimLedger{ledger: ledger{limit: 1}, small: 100}
	line := &waitLine{}
	first, second := oweWire(t, b, line, 500), oweWire(t, b, line, 600)
	if settle(first, 1) || settle(second, 1) || !slices.Equal(b.claims, []int64{500}) {
		t.Fatalf("claims %v, want the head's 500 only", b.claims)
	}
	first.close()
	if err := first.await(); !errors.Is(err, errWireClosed) && err != nil {
		t.Errorf("a closed wire's wait: %v, want nil (nothing owed) or errWireClosed", err)
	}
	if b.canceled != 1 || settle(second, 1) || !slices.Equal(b.claims, []int64{500, 600}) {
		t.Fatalf("after the head's connection closed: %d claims cancelled, claims %v, want 1 and [500 600]", b.canceled, b.claims)
	}
	if n := b.inUse(); n != 0 {
		t.Errorf("%d bytes charged after the close, want 0", n)
	}
}
