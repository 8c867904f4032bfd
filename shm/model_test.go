package shm

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestModelCountersConcurrent: writers of two models and a reader run at
// once (run with -race); the reader's counts never go back and the final
// counts are exact, per model and per reason.
func TestModelCountersConcurrent(t *testing.T) {
	const writers, perWriter = 4, 2000
	b := newBoard(t, 2)
	s := b.Slot(0)
	s.Claim(Identity{Role: "prep", Name: "prep-0", Models: []string{"a", "b"}})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, bm := s.Model(0), s.Model(1)
			for i := 0; i < perWriter; i++ {
				a.RequestFinished(time.Microsecond, Success)
				bm.RequestFinished(time.Microsecond, Failures()[i%4])
				bm.ObserveQueueTime(time.Microsecond)
				bm.BatchExecuted(2, 3, true, 1, 2, 3)
				s.Model(MaxModels).RequestFinished(time.Second, Success) // discarded
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var last uint64
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		snap := b.SlotSnapshot(0)
		if len(snap.ModelStats) != 2 {
			t.Fatalf("ModelStats = %+v, want a and b", snap.ModelStats)
		}
		if n := snap.ModelStats[0].Success; n < last {
			t.Fatalf("success went back from %d to %d", last, n)
		} else {
			last = n
		}
	}
	snap := b.SlotSnapshot(0)
	a, bm := snap.ModelStats[0], snap.ModelStats[1]
	if a.Name != "a" || a.Success != writers*perWriter || a.Failed() != 0 || a.RequestTime != writers*perWriter*time.Microsecond {
		t.Errorf("model a = %+v", a)
	}
	for _, f := range Failures() {
		if got := bm.Failures[f]; got != writers*perWriter/4 {
			t.Errorf("model b %s failures = %d, want %d", f, got, writers*perWriter/4)
		}
	}
	n := uint64(writers * perWriter)
	if bm.QueueCount != n || bm.Inferences != 3*n || bm.Executions != n || bm.ComputeInfer != time.Duration(2*2*n) {
		t.Errorf("model b = %+v", bm)
	}
	s.Claim(Identity{Name: "prep-0", Models: []string{"a"}})
	if got := b.SlotSnapshot(0).ModelStats; len(got) != 1 || got[0].Success != 0 {
		t.Errorf("after re-Claim ModelStats = %+v, want one zeroed model", got)
	}
	var zero ModelSlot
	zero.RequestFinished(time.Second, Backend) // must not panic
	var nilSlot *Slot
	nilSlot.Model(0).BatchExecuted(1, 1, true, 0, 0, 0)
}

func TestPathForAndBoards(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := PathFor(dir, 11), PathFor(dir, 12)
	if p1 == p2 || filepath.Dir(p1) != Dir || PathFor(dir+"/", 11) != p1 {
		t.Fatalf("PathFor = %q, %q", p1, p2)
	}
	if PathFor(t.TempDir(), 11) == p1 {
		t.Error("two runtime dirs share a board path")
	}
	for _, p := range []string{p1, p2} {
		b, err := Create(p, 1, 1, 1)
		if err != nil {
			t.Skipf("no %s here: %v", Dir, err)
		}
		t.Cleanup(func() { b.Remove() })
	}
	got := Boards(dir)
	if len(got) != 2 || got[11] != p1 || got[12] != p2 {
		t.Errorf("Boards = %v, want 11 and 12", got)
	}
	if _, err := os.Stat(p1); err != nil {
		t.Error(err)
	}
}
