package budget

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// lanes is a budget like a prep worker's: small decodes (2 places, 20
// bytes), large decodes (2 places, 100 bytes) and answers within the
// large lane (bytes only).
func lanes() (b *Budget, small, large, answers *Lane) {
	small = &Lane{Name: "small decodes", Room: 20, Places: 2}
	large = &Lane{Name: "large decodes", Room: 100, Places: 2}
	answers = &Lane{Name: "answers", Within: large}
	return New(small, large, answers), small, large, answers
}

func reserve(t *testing.T, b *Budget, n int64, l *Lane) *Charge {
	t.Helper()
	c, err := b.Reserve(n, l)
	if err != nil {
		t.Fatalf("Reserve(%d, %s) = %v", n, l.Name, err)
	}
	return c
}

func wantState(t *testing.T, l *Lane, want State) {
	t.Helper()
	if s := l.State(); s != want {
		t.Fatalf("%s: %+v, want %+v", l.Name, s, want)
	}
}

// TestChargeGrowsAndReleasesOnce: a charge grows within its lane's room,
// is refused (holding what it held) beyond it, busy or never, and its
// Release gives everything back once however often it is called; a
// released charge grows no more.
func TestChargeGrowsAndReleasesOnce(t *testing.T) {
	b, _, large, answers := lanes()
	d := reserve(t, b, 60, large)
	a := reserve(t, b, 10, answers)
	if err := a.Grow(40); err != nil {
		t.Fatalf("Grow(40) beside 60 of 100: %v", err)
	}
	if err := a.Grow(41); !errors.Is(err, ErrBusy) || a.Bytes() != 40 {
		t.Fatalf("Grow(41) beside 60 of 100 = %v holding %d, want ErrBusy holding 40", err, a.Bytes())
	}
	if err := a.Grow(101); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Grow(101) in a room of 100 = %v, want ErrTooLarge", err)
	}
	if err := a.Grow(5); err != nil || a.Bytes() != 40 {
		t.Fatalf("Grow(5) of a charge of 40 = %v holding %d, want nil holding 40", err, a.Bytes())
	}
	wantState(t, large, State{In: 1, Bytes: 100})
	wantState(t, answers, State{In: 1, Bytes: 40})
	a.Release()
	a.Release()
	if err := a.Grow(1); !errors.Is(err, ErrReleased) {
		t.Fatalf("Grow of a released charge = %v, want ErrReleased", err)
	}
	d.Release()
	wantState(t, large, State{})
	wantState(t, answers, State{})
	var none *Charge
	none.Release()
	if err := none.Grow(math.MaxInt64); err != nil || none.Bytes() != 0 {
		t.Fatalf("the nil charge: Grow = %v, Bytes %d; want nil, 0", err, none.Bytes())
	}
}

// TestShrinkGivesPartBack: Shrink gives back what a charge holds past
// its new size and lets in a waiter that now fits; a charge keeps its
// place, never grows by Shrink, and a released one stays at nothing.
func TestShrinkGivesPartBack(t *testing.T) {
	b, _, large, answers := lanes()
	d := reserve(t, b, 90, large)
	ch := waitAsync(b, context.Background(), 30, answers, nil)
	untilState(t, answers, State{Waiting: 1})
	d.Shrink(100) // more than it holds: nothing
	d.Shrink(60)
	a := got(t, ch, "the wait after the shrink")
	wantState(t, large, State{In: 1, Bytes: 90})
	if d.Bytes() != 60 || a.Bytes() != 30 {
		t.Fatalf("after Shrink(60): %d and %d held, want 60 and 30", d.Bytes(), a.Bytes())
	}
	d.Shrink(-5)
	wantState(t, large, State{In: 1, Bytes: 30})
	wantState(t, answers, State{In: 1, Bytes: 30})
	a.Release()
	a.Shrink(0)
	d.Release()
	wantState(t, large, State{})
	var none *Charge
	none.Shrink(1)
}

// TestPlacesBoundChargesNotBytes: a lane of two places holds two charges
// whatever their bytes; a third is refused, and a charge within it takes
// bytes but no place.
func TestPlacesBoundChargesNotBytes(t *testing.T) {
	b, small, large, answers := lanes()
	s1, s2 := reserve(t, b, 1, small), reserve(t, b, 1, small)
	if _, err := b.Reserve(1, small); !errors.Is(err, ErrBusy) {
		t.Fatalf("a third small charge in 2 places = %v, want ErrBusy", err)
	}
	l1, l2 := reserve(t, b, 1, large), reserve(t, b, 1, large)
	a := reserve(t, b, 50, answers)
	wantState(t, large, State{In: 2, Bytes: 52})
	for _, c := range []*Charge{s1, s2, l1, l2, a} {
		c.Release()
	}
	wantState(t, small, State{})
	wantState(t, large, State{})
}

// TestHugeSizesSaturate: sizes near the int64 limit are refused as too
// large, never wrapped to fit; a negative one counts as nothing.
func TestHugeSizesSaturate(t *testing.T) {
	b, _, large, answers := lanes()
	c := reserve(t, b, 99, large)
	for _, n := range []int64{math.MaxInt64, math.MaxInt64 - 98, 1 << 62} {
		if _, err := b.Reserve(n, answers); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Reserve(%d) = %v, want ErrTooLarge", n, err)
		}
		if err := c.Grow(n); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Grow(%d) = %v, want ErrTooLarge", n, err)
		}
	}
	neg := reserve(t, b, -1<<62, answers)
	if neg.Bytes() != 0 {
		t.Errorf("a negative reservation holds %d, want 0", neg.Bytes())
	}
	neg.Release()
	c.Release()
	wantState(t, large, State{})
	wide := &Lane{Name: "wide", Room: math.MaxInt64}
	wb := New(wide)
	w := reserve(t, wb, math.MaxInt64-1, wide)
	if _, err := wb.Reserve(2, wide); !errors.Is(err, ErrBusy) {
		t.Errorf("2 bytes beside MaxInt64-1 of MaxInt64 = %v, want ErrBusy", err)
	}
	w.Release()
}

func waitAsync(b *Budget, ctx context.Context, n int64, l *Lane, gone func() error) <-chan *Charge {
	got := make(chan *Charge, 1)
	go func() {
		c, err := b.Wait(ctx, n, l, gone)
		if err != nil {
			c = nil
		}
		got <- c
	}()
	return got
}

func untilState(t *testing.T, l *Lane, want State) {
	t.Helper()
	if !polltest.Wait(30*time.Second, time.Millisecond, func() bool { return l.State() == want }) {
		t.Fatalf("%s: %+v, want %+v", l.Name, l.State(), want)
	}
}

func got(t *testing.T, ch <-chan *Charge, what string) *Charge {
	t.Helper()
	select {
	case c := <-ch:
		if c == nil {
			t.Fatalf("%s: the wait gave up", what)
		}
		return c
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting", what)
	}
	return nil
}

// TestWaitersEnterInOrder: a large wait that does not fit yet is not
// overtaken by a smaller one behind it that would, nor by a new charge
// in the lane or in a lane within it.
func TestWaitersEnterInOrder(t *testing.T) {
	b, _, large, answers := lanes()
	held := reserve(t, b, 40, large)
	big := waitAsync(b, context.Background(), 100, large, nil)
	untilState(t, large, State{In: 1, Bytes: 40, Waiting: 1})
	behind := waitAsync(b, context.Background(), 20, large, nil)
	untilState(t, large, State{In: 1, Bytes: 40, Waiting: 2})
	if _, err := b.Reserve(1, answers); !errors.Is(err, ErrBusy) {
		t.Fatalf("a new answer beside waiting decodes = %v, want ErrBusy", err)
	}
	held.Release()
	c := got(t, big, "the 100-byte wait first in line")
	untilState(t, large, State{In: 1, Bytes: 100, Waiting: 1})
	c.Release()
	got(t, behind, "the 20-byte wait behind it").Release()
	wantState(t, large, State{})
}

// TestWaitGivesUpHoldingNothing: a wait ends with its context's cause or
// its gone function's error, leaves the queue, and one behind it that
// fits moves up.
func TestWaitGivesUpHoldingNothing(t *testing.T) {
	b, _, large, _ := lanes()
	held := reserve(t, b, 60, large)
	ctx, cancel := context.WithCancelCause(context.Background())
	errGone := errors.New("the client went")
	ended := make(chan error, 2)
	go func() { _, err := b.Wait(ctx, 90, large, nil); ended <- err }()
	untilState(t, large, State{In: 1, Bytes: 60, Waiting: 1})
	var gone atomicErr
	go func() { _, err := b.Wait(context.Background(), 80, large, gone.load); ended <- err }()
	untilState(t, large, State{In: 1, Bytes: 60, Waiting: 2})
	behind := waitAsync(b, context.Background(), 40, large, nil)
	untilState(t, large, State{In: 1, Bytes: 60, Waiting: 3})
	cancel(errGone)
	gone.store(errGone)
	for range 2 {
		select {
		case err := <-ended:
			if !errors.Is(err, errGone) {
				t.Fatalf("a wait that gave up = %v, want its cause", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a wait whose client went still waits")
		}
	}
	got(t, behind, "the wait behind those that gave up").Release()
	held.Release()
	wantState(t, large, State{})
	if _, err := b.Wait(context.Background(), 101, large, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a wait that could never fit = %v, want ErrTooLarge at once", err)
	}
}
