package polltest

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitSeesTheConditionChange(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if !Wait(10*time.Second, time.Millisecond, func() bool { return n.Load() == 3 }) {
		t.Fatalf("n = %d after 10s, want 3", n.Load())
	}
}

func TestWaitGivesUpAtTheDeadline(t *testing.T) {
	looks := 0
	start := time.Now()
	if Wait(50*time.Millisecond, 10*time.Millisecond, func() bool { looks++; return false }) {
		t.Fatal("a condition that never holds was reported as holding")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("gave up after %s, before the 50ms deadline", took)
	}
	if looks < 2 || looks > 20 {
		t.Errorf("%d looks in 50ms at a 10ms interval, want a handful", looks)
	}
}
