package prep

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/budget"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// testGate is a gate of places places and budget bytes, small decodes up
// to small bytes: the large lane holds budget − places×small.
func testGate(places int, small, budget int64) *decodegate.Gate {
	return decodegate.NewLanes(places, small, budget)
}

// mustEnter enters g at once, and fails if it cannot.
func mustEnter(t *testing.T, g *decodegate.Gate, cost int64) *budget.Charge {
	t.Helper()
	c, err := g.Enter(cost, stopper{}.Check)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// entry is what enter returned.
type entry struct {
	c   *budget.Charge
	err error
}

// enterAsync enters g from a new goroutine; the channel gets enter's
// result.
func enterAsync(g *decodegate.Gate, cost int64, stop stopper) <-chan entry {
	done := make(chan entry, 1)
	go func() {
		c, err := g.Enter(cost, stop.Check)
		done <- entry{c, err}
	}()
	return done
}

// entered waits (bounded) for an enterAsync to return, fails unless it
// returned nil, and returns the decode's charge.
func entered(t *testing.T, done <-chan entry, what string) *budget.Charge {
	t.Helper()
	select {
	case e := <-done:
		if e.err != nil {
			t.Fatalf("%s: enter = %v", what, e.err)
		}
		return e.c
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting at the gate", what)
	}
	return nil
}

// waitState waits (bounded) until the gate's state is want.
func waitState(t *testing.T, g *decodegate.Gate, want decodegate.State) {
	t.Helper()
	if !polltest.Wait(30*time.Second, time.Millisecond, func() bool { return g.State() == want }) {
		t.Fatalf("gate state %+v, want %+v", g.State(), want)
	}
}

// TestDecodeGateBounds: however many decodes of mixed sizes come at
// once, the bytes of those in flight never exceed the budget and neither
// lane runs more than places at once.
func TestDecodeGateBounds(t *testing.T) {
	g := testGate(2, 10, 100) // large lane: 80 bytes
	var bytes, most atomic.Int64
	var small, large, mostSmall, mostLarge atomic.Int32
	var wg sync.WaitGroup
	for k := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(k), 1))
			for range 200 {
				cost := r.Int64N(80) + 1
				c, err := g.Enter(cost, stopper{}.Check)
				if err != nil {
					t.Error(err)
					return
				}
				storeMax64(&most, bytes.Add(cost))
				n, lane := &small, &mostSmall
				if g.IsLarge(cost) {
					n, lane = &large, &mostLarge
				}
				storeMax(lane, n.Add(1))
				n.Add(-1)
				bytes.Add(-cost)
				c.Release()
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m < 1 || m > 100 {
		t.Errorf("%d bytes in flight at once with a budget of 100", m)
	}
	if s, l := mostSmall.Load(), mostLarge.Load(); s > 2 || l > 2 || l < 1 {
		t.Errorf("%d small and %d large decodes at once, places 2", s, l)
	}
	waitState(t, g, decodegate.State{})
}

// TestSmallDecodeDoesNotWaitBehindLarge: with the large lane full and a
// large decode queued, a small decode enters at once, and a second small
// one waits only for the first.
func TestSmallDecodeDoesNotWaitBehindLarge(t *testing.T) {
	g := testGate(1, 10, 100) // large lane: 90 bytes, one place
	held := mustEnter(t, g, 90)
	queued := enterAsync(g, 50, stopper{})
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: 90, LargeWaiting: 1})
	first := entered(t, enterAsync(g, 10, stopper{}), "a small decode behind a full large lane")
	second := enterAsync(g, 1, stopper{})
	waitState(t, g, decodegate.State{SmallIn: 1, LargeIn: 1, LargeBytes: 90, SmallWaiting: 1, LargeWaiting: 1})
	first.Release()
	entered(t, second, "the second small decode, once the first left").Release()
	held.Release()
	entered(t, queued, "the queued large decode, once the lane emptied").Release()
	waitState(t, g, decodegate.State{})
}

// TestLargeDecodesFirstComeFirstServed: a large decode that does not fit
// yet is not overtaken by a smaller one behind it that would.
func TestLargeDecodesFirstComeFirstServed(t *testing.T) {
	g := testGate(4, 10, 140) // large lane: 100 bytes, four places
	held := mustEnter(t, g, 40)
	big := enterAsync(g, 100, stopper{})
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: 40, LargeWaiting: 1})
	behind := enterAsync(g, 20, stopper{}) // would fit beside the 40
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: 40, LargeWaiting: 2})
	held.Release()
	bigIn := entered(t, big, "the 100-byte decode first in line")
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: 100, LargeWaiting: 1})
	bigIn.Release()
	entered(t, behind, "the 20-byte decode behind it").Release()
}

// TestDecodeGateRefusesWhatCouldNeverFit: an image costing more than the
// large lane holds is refused at once, naming the budget, and queues
// nothing; one that fits exactly enters.
func TestDecodeGateRefusesWhatCouldNeverFit(t *testing.T) {
	g := testGate(2, 10, 100)
	_, err := g.Enter(81, stopper{}.Check)
	var ob *decodegate.OverBudgetError
	if !errors.Is(err, decodegate.ErrOverBudget) || !errors.As(err, &ob) || ob.Largest != 80 || ob.Budget != 100 {
		t.Fatalf("enter(81) = %v, want an *decodegate.OverBudgetError with largest 80, budget 100", err)
	}
	waitState(t, g, decodegate.State{})
	c, err := g.Enter(80, stopper{}.Check)
	if err != nil {
		t.Fatalf("enter(80) = %v", err)
	}
	c.Release()
	if d := decodegate.New(1 << 20); d.Small()*int64(2*d.Places()) > d.Total() || d.Largest() < d.Total()/2 {
		t.Errorf("decodegate.New(1 MiB): small %d × places %d takes more than half the budget", d.Small(), d.Places())
	}
}

// TestDecodeGateGivesUpForAGoneClient: a decode waiting at a full gate
// leaves when its client's deadline passes (the fake clock passes it when
// the test says), and a large decode queued behind it moves up.
func TestDecodeGateGivesUpForAGoneClient(t *testing.T) {
	g := testGate(2, 10, 120) // large lane: 100 bytes
	held := mustEnter(t, g, 60)
	var passed atomic.Bool
	now := func() time.Time {
		if passed.Load() {
			return time.Unix(2000, 0)
		}
		return time.Unix(1000, 0)
	}
	gone := enterAsync(g, 90, stopper{deadline: time.Unix(1500, 0), now: now})
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: 60, LargeWaiting: 1})
	behind := enterAsync(g, 40, stopper{}) // fits beside the 60, but comes after the 90
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: 60, LargeWaiting: 2})
	passed.Store(true)
	select {
	case e := <-gone:
		if !errors.Is(e.err, errDeadlinePassed) {
			t.Fatalf("enter = %v, want errDeadlinePassed", e.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a decode for a gone client still waits at the gate")
	}
	behindIn := entered(t, behind, "the decode behind the one whose client went")
	waitState(t, g, decodegate.State{LargeIn: 2, LargeBytes: 100})
	behindIn.Release()
	held.Release()
	var nilGate *decodegate.Gate
	none, err := nilGate.Enter(1<<40, stopper{}.Check)
	if err != nil {
		t.Fatalf("nil gate: %v", err)
	}
	none.Release()
}

// storeMax raises a to n if n is larger.
func storeMax(a *atomic.Int32, n int32) {
	for {
		m := a.Load()
		if n <= m || a.CompareAndSwap(m, n) {
			return
		}
	}
}

func storeMax64(a *atomic.Int64, n int64) {
	for {
		m := a.Load()
		if n <= m || a.CompareAndSwap(m, n) {
			return
		}
	}
}
