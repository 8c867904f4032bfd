package grpcfront

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// claimLedger is a full ledger that records the claims it is asked for,
// gives them for messages over small, and never fills them.
type claimLedger struct {
	ledger
	small    int64
	claims   []int64
	canceled int
}

func (l *claimLedger) ClaimBody(n, total int64) (func() bool, func()) {
	if total <= l.small {
		return nil, nil
	}
	l.claims = append(l.claims, n)
	return func() bool { return false }, func() { l.canceled++ }
}

// settle tries once to charge what w's stream id owes.
func settle(w *wire, id uint32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.settleLocked(id)
}

// oweWire is a wire of b in line that owes a message of n bytes on
// stream 1, its first 6 bytes read.
func oweWire(t *testing.T, b Budget, line *waitLine, n int) *wire {
	t.Helper()
	w := newWire(b, wireMax, time.Minute, line)
	if err := w.read(clientBytes(t, func(f *http2.Framer) error {
		return errors.Join(headers(f, 1, false), f.WriteData(1, false, msg(n, 0)[:6]))
	})); err != nil {
		t.Fatal(err)
	}
	return w
}

// Only the head of the line claims room; a small head leaves the line
// at once; a head whose stream ends gives its claim back, and the next
// in line claims.
func TestWaitLineOnlyTheHeadClaims(t *testing.T) {
	b := &claimLedger{ledger: ledger{limit: 1}, small: 100}
	line := &waitLine{}
	owe := func(n int) *wire { return oweWire(t, b, line, n) }
	small, first, second := owe(50), owe(500), owe(600)
	if settle(second, 1) || settle(first, 1) || len(b.claims) != 0 {
		t.Fatalf("claims %v while a small message heads the line", b.claims)
	}
	if settle(small, 1) || settle(first, 1) || !slices.Equal(b.claims, []int64{500}) {
		t.Fatalf("claims %v, want the first large message's 500 once the small one left the line", b.claims)
	}
	if settle(second, 1) || settle(first, 1) || len(b.claims) != 1 {
		t.Fatalf("claims %v, want one: the second is not the head, the head claims once", b.claims)
	}
	var out bytes.Buffer
	if err := http2.NewFramer(&out, nil).WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	first.wrote(out.Bytes())
	if b.canceled != 1 || settle(second, 1) || !slices.Equal(b.claims, []int64{500, 600}) {
		t.Fatalf("after the head's stream ended: %d claims cancelled, claims %v, want 1 and [500 600]", b.canceled, b.claims)
	}
}
