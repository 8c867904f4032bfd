package admission

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

const mib = 1 << 20

// reserve is b.Reserve(n, n) that must succeed.
func reserve(t *testing.T, b *Bodies, n int64) *budget.Charge {
	t.Helper()
	c, err := b.Reserve(n, n)
	if err != nil {
		t.Fatalf("%d bytes refused with %d in use: %v", n, b.InUse(), err)
	}
	return c
}

// TestBodiesShares: large bodies may take seven eighths of the budget,
// small ones all of it, and released bytes can be taken again.
func TestBodiesShares(t *testing.T) {
	b := NewBodies(64 * mib)
	big := reserve(t, b, 56*mib)
	if _, err := b.Reserve(2*mib, 2*mib); err == nil {
		t.Fatal("a 2 MiB (large) body took part of the eighth kept for small bodies")
	}
	var small []*budget.Charge
	for range 8 {
		small = append(small, reserve(t, b, mib))
	}
	if _, err := b.Reserve(1, 1); !errors.Is(err, budget.ErrBusy) {
		t.Fatalf("a byte over the full budget: %v, want ErrBusy", err)
	}
	if _, err := b.Reserve(57*mib, 57*mib); !errors.Is(err, budget.ErrTooLarge) {
		t.Fatalf("a body over seven eighths: %v, want ErrTooLarge", err)
	}
	for _, c := range small {
		c.Release()
	}
	big.Release()
	big.Release() // twice: nothing more
	if b.InUse() != 0 || b.Large() != 0 {
		t.Fatalf("%d bytes in use (%d large) after every release", b.InUse(), b.Large())
	}
	reserve(t, b, 56*mib).Release()
}

// TestHeldAnswersLeaveTheSmallBodiesEighth: answers held for a client
// that never reads them, each just under 1 MiB (a "small" size), fill at
// most seven eighths of the budget, so a small request body still finds
// room; and giving them back leaves the budget and its large count at 0.
// Reserved as small bodies, 8 of them filled an 8 MiB budget and every
// request was refused (cmd/hostile grpc-unread-large).
func TestHeldAnswersLeaveTheSmallBodiesEighth(t *testing.T) {
	const limit, answer = 8 * mib, SmallBodyBytes - 4096
	b := NewBodies(limit)
	var held []*budget.Charge
	for len(held) < 16 {
		c, err := b.ReserveAnswer(answer)
		if err != nil {
			break
		}
		held = append(held, c)
	}
	if used := b.InUse(); used > limit-limit/8 {
		t.Errorf("%d held answers take %d bytes, more than the large bodies' seven eighths (%d)", len(held), used, limit-limit/8)
	}
	reserve(t, b, 64<<10).Release()
	for _, c := range held {
		c.Release()
	}
	if b.InUse() != 0 || b.Large() != 0 {
		t.Errorf("after the answers were given back: %d bytes in use, %d large, want 0 and 0", b.InUse(), b.Large())
	}
}

// TestLargeWaiterTakesFreedRoomFirst: a large body waiting for room (a
// gRPC message at the head of the line) gets the room given back before
// the small bodies that keep coming; behind large bodies holding seven
// eighths it keeps no small body out of the eighth; once in, its bytes
// go back with its charge. The large reserves queue behind it.
func TestLargeWaiterTakesFreedRoomFirst(t *testing.T) {
	b := NewBodies(8 * mib) // large bodies: up to 7 MiB
	var small []*budget.Charge
	for range 6 {
		small = append(small, reserve(t, b, mib))
	}
	got := make(chan *budget.Charge, 1)
	go func() {
		c, err := b.Wait(context.Background(), 4*mib, nil)
		if err != nil {
			t.Errorf("the large wait: %v", err)
		}
		got <- c
	}()
	waitFor(t, func() bool { return b.Waiting() == 1 })
	if _, err := b.Reserve(mib, mib); err == nil {
		t.Fatal("a small body took the 2 MiB free that the waiting large body needs")
	}
	if _, err := b.Reserve(2*mib, 2*mib); !errors.Is(err, budget.ErrBusy) {
		t.Fatalf("a large body overtook the waiting one: %v", err)
	}
	small[0].Release()
	small[1].Release()
	heir := <-got
	if heir.Bytes() != 4*mib || b.InUse() != 8*mib || b.Large() != 4*mib {
		t.Fatalf("the heir holds %d, %d in use (%d large), want 4 MiB, 8 MiB, 4 MiB", heir.Bytes(), b.InUse(), b.Large())
	}
	heir.Release()
	for _, c := range small[2:] {
		c.Release()
	}

	full := reserve(t, b, 7*mib) // large bodies at their ceiling
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		c, err := b.Wait(ctx, 2*mib, nil)
		c.Release()
		done <- err
	}()
	waitFor(t, func() bool { return b.Waiting() == 1 })
	reserve(t, b, mib).Release() // the eighth stays the small bodies'
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled wait: %v", err)
	}
	full.Release()
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Fatalf("%d in use, %d waiting after every release", b.InUse(), b.Waiting())
	}
}

// TestBodiesRace: bodies reserved and released from many goroutines
// while large ones wait, enter and give back, or give up: whatever the
// order, once all is given back nothing is in use, large or not.
func TestBodiesRace(t *testing.T) {
	b := NewBodies(8 * mib)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				n := int64(64<<10) << (i % 6) // 64 KiB to 2 MiB: small and large
				if c, err := b.Reserve(n, n); err == nil {
					c.Release()
				}
				if g == 0 && i%50 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					c, _ := b.Wait(ctx, 3*mib, nil)
					cancel()
					c.Release()
				}
			}
		})
	}
	wg.Wait()
	if b.InUse() != 0 || b.Large() != 0 || b.Waiting() != 0 {
		t.Fatalf("after every release: %d in use, %d large, %d waiting", b.InUse(), b.Large(), b.Waiting())
	}
}

// TestSetLimitFollowsAReload: a new limit is the lanes' new room; what
// is held stays held.
func TestSetLimitFollowsAReload(t *testing.T) {
	b := NewBodies(8 * mib)
	c := reserve(t, b, 7*mib)
	b.SetLimit(16 * mib)
	d := reserve(t, b, 7*mib)
	b.SetLimit(4 * mib)
	if _, err := b.Reserve(1, 1); err == nil {
		t.Fatal("a byte was taken over a limit made smaller than what is held")
	}
	if _, err := b.Reserve(4*mib, 4*mib); !errors.Is(err, budget.ErrTooLarge) {
		t.Fatalf("4 MiB under a 4 MiB limit: %v, want ErrTooLarge (over seven eighths)", err)
	}
	c.Release()
	d.Release()
	reserve(t, b, 3*mib).Release()
}

// waitFor waits until cond holds, for at most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	polltest.Until(t, 10*time.Second, time.Millisecond, "the wait to queue", cond)
}
