package budget

import (
	"context"
	"errors"
	"testing"
)

// bodies is a budget like the master's body budget: every body within
// 80 bytes, the large ones (a Heir lane) within 70 of them, so that 10
// stay the small ones'.
func bodies() (b *Budget, all, small, large *Lane) {
	all = &Lane{Name: "bodies", Room: 80}
	small = &Lane{Name: "small bodies", Within: all}
	large = &Lane{Name: "large bodies", Room: 70, Within: all, Heir: true}
	return New(all, small, large), all, small, large
}

// TestHeirKeepsFreedRoom: a large charge waiting first in its Heir lane
// gets the room freed beside it before the small charges that keep
// coming, which would otherwise take it the moment it frees; what it
// holds back is bounded by its lane's room, so a heir that does not fit
// yet keeps no small charge out of the room the large lane leaves them.
func TestHeirKeepsFreedRoom(t *testing.T) {
	b, all, small, large := bodies()
	s1 := reserve(t, b, 30, small)
	l1 := reserve(t, b, 40, large)
	heir := waitAsync(b, context.Background(), 50, large, nil)
	untilState(t, large, State{In: 1, Bytes: 40, Waiting: 1})
	// The heir lacks 50 but its lane has room for 30 more: 30 of the 10
	// free are held back, so 10 − 10 leave nothing for a small charge.
	if _, err := b.Reserve(1, small); !errors.Is(err, ErrBusy) {
		t.Fatalf("a small charge beside a heir holding the free room back = %v, want ErrBusy", err)
	}
	s1.Release() // 40 free, 30 of them held back: 10 for small charges
	s2 := reserve(t, b, 10, small)
	if _, err := b.Reserve(1, small); !errors.Is(err, ErrBusy) {
		t.Fatalf("a small charge past the heir's share = %v, want ErrBusy", err)
	}
	l1.Release() // the heir's 50 are free now, and within its lane's 70
	c := got(t, heir, "the heir")
	wantState(t, all, State{In: 0, Bytes: 60})
	wantState(t, large, State{In: 1, Bytes: 50})
	s3 := reserve(t, b, 20, small) // no heir: all the room left
	c.Release()
	s2.Release()
	s3.Release()
	wantState(t, all, State{})
	wantState(t, small, State{})
}

// TestHeirLeavesTheOthersTheirShare: a heir that could never be whole
// beside the large charges held holds back nothing of the room the large
// lane leaves to the small ones.
func TestHeirLeavesTheOthersTheirShare(t *testing.T) {
	b, _, small, large := bodies()
	l1 := reserve(t, b, 70, large)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := b.Wait(ctx, 60, large, nil); done <- err }()
	untilState(t, large, State{In: 1, Bytes: 70, Waiting: 1})
	s := reserve(t, b, 10, small)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the heir's wait = %v, want its context's end", err)
	}
	s.Release()
	l1.Release()
	wantState(t, large, State{})
}

// TestSetRoomLetsWaitersIn: a room made larger lets in the waiters that
// now fit; one made smaller than what the lane holds refuses new charges
// and takes nothing back.
func TestSetRoomLetsWaitersIn(t *testing.T) {
	b, all, small, large := bodies()
	held := reserve(t, b, 60, small)
	w := waitAsync(b, context.Background(), 30, large, nil)
	untilState(t, large, State{Waiting: 1})
	b.SetRoom(all, 100)
	c := got(t, w, "the wait let in by a larger room")
	b.SetRoom(all, 50)
	wantState(t, all, State{Bytes: 90})
	if _, err := b.Reserve(1, small); !errors.Is(err, ErrBusy) {
		t.Fatalf("a charge in a room made smaller than what it holds = %v, want ErrBusy", err)
	}
	if err := large.Check(51); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Check(51) in a room of 50 = %v, want ErrTooLarge", err)
	}
	held.Release()
	c.Release()
	reserve(t, b, 50, small).Release()
	wantState(t, all, State{})
}
