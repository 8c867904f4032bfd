package prep

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDecodeGateBoundsDecodesAtOnce(t *testing.T) {
	g := make(decodeGate, 2)
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := g.enter(stopper{}); err != nil {
					t.Error(err)
					return
				}
				storeMax(&most, in.Add(1))
				in.Add(-1)
				g.leave()
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m < 1 || m > 2 {
		t.Errorf("%d decodes at once through a gate of 2", m)
	}
}

// TestDecodeGateGivesUpForAGoneClient: a request waiting at a full gate
// leaves when its client's deadline passes (the fake clock passes it at
// the third look).
func TestDecodeGateGivesUpForAGoneClient(t *testing.T) {
	g := make(decodeGate, 1)
	if err := g.enter(stopper{}); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Unix(1000, 0)}
	done := make(chan error, 1)
	go func() { done <- g.enter(stopper{deadline: time.Unix(1002, 5e8), now: c.now}) }()
	select {
	case err := <-done:
		if !errors.Is(err, errDeadlinePassed) {
			t.Fatalf("enter = %v, want errDeadlinePassed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a request for a gone client still waits at the gate")
	}
	g.leave()
	if err := g.enter(stopper{}); err != nil {
		t.Fatalf("after leave: %v", err)
	}
	var nilGate decodeGate
	if err := nilGate.enter(stopper{}); err != nil {
		t.Fatalf("nil gate: %v", err)
	}
	nilGate.leave()
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
