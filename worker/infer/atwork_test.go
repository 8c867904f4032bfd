package infer

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/shm"
)

// TestRunsRecordsRunsAndIsolatesAlone: a run's tokens are in the slot's
// work record while it executes and gone after; an alone run waits for
// the runs executing and holds off the next one until it ends, so a
// crash during it is its own.
func TestRunsRecordsRunsAndIsolatesAlone(t *testing.T) {
	b, err := shm.Create(filepath.Join(t.TempDir(), "b"), 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := &runs{slot: b.Slot(0)}
	doneA := w.running(batch.Run{IDs: []uint64{1, 2}})
	at := b.AtWork(0)
	if len(at.Units) != 1 {
		t.Fatalf("at work during run A = %+v, want one unit", at)
	}
	for _, ts := range at.Units {
		if !slices.Equal(slices.Sorted(slices.Values(ts)), []uint64{1, 2}) {
			t.Fatalf("run A recorded %v, want [1 2]", ts)
		}
	}
	aloneIn := make(chan func())
	go func() { aloneIn <- w.running(batch.Run{IDs: []uint64{3}, Alone: true}) }()
	select {
	case <-aloneIn:
		t.Fatal("the alone run started while run A executes")
	case <-time.After(50 * time.Millisecond): // a bound on a wrong start, not a wait for a right one
	}
	doneA()
	doneAlone := <-aloneIn
	if _, ok := b.AtWork(0).Unit(3); !ok {
		t.Fatal("the alone run is not recorded")
	}
	cIn := make(chan func())
	go func() { cIn <- w.running(batch.Run{IDs: []uint64{4}}) }()
	select {
	case <-cIn:
		t.Fatal("a run started during the alone run")
	case <-time.After(50 * time.Millisecond):
	}
	doneAlone()
	(<-cIn)()
	if at := b.AtWork(0); at.Units != nil {
		t.Fatalf("at work after every run ended = %+v, want nothing", at)
	}
}
