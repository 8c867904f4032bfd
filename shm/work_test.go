package shm

import (
	"slices"
	"sync"
	"testing"
)

// TestWorkRecordsUnitsUntilEnd: what Begin records is read back by unit
// until End, and a Claim clears it; tokens that do not fit are counted
// as missed, never lost.
func TestWorkRecordsUnitsUntilEnd(t *testing.T) {
	b := newBoard(t, 1)
	s := b.Slot(0)
	run := s.Begin(7, 11, 12, 0) // 0: a request without a token
	decode := s.Begin(8, 13)
	a := b.AtWork(0)
	if len(a.Units) != 2 || !slices.Equal(sorted(a.Units[7]), []uint64{11, 12}) || !slices.Equal(a.Units[8], []uint64{13}) || a.Missed != 0 {
		t.Fatalf("at work = %+v, want unit 7 {11,12} and unit 8 {13}", a)
	}
	if u, ok := a.Unit(12); !ok || u != 7 {
		t.Errorf("Unit(12) = %d, %v; want 7", u, ok)
	}
	if _, ok := a.Unit(99); ok {
		t.Error("Unit(99) found a token never recorded")
	}
	run.End()
	if a := b.AtWork(0); len(a.Units) != 1 || len(a.Units[8]) != 1 {
		t.Fatalf("after the run ended = %+v, want only unit 8", a)
	}
	full := make([]uint64, WorkEntries+2)
	for i := range full {
		full[i] = uint64(100 + i)
	}
	big := s.Begin(9, full...)
	if a := b.AtWork(0); a.Missed != 3 || len(a.Units[9]) != WorkEntries-1 {
		t.Fatalf("an overfull unit: missed %d, recorded %d; want 3 and %d", a.Missed, len(a.Units[9]), WorkEntries-1)
	}
	big.End()
	decode.End()
	if a := b.AtWork(0); a.Units != nil || a.Missed != 0 {
		t.Fatalf("after every End = %+v, want nothing", a)
	}
	s.Begin(1, 5)
	s.Claim(Identity{Role: "infer", Name: "infer-0"})
	if a := b.AtWork(0); a.Units != nil {
		t.Errorf("a new claim kept the old worker's work: %+v", a)
	}
}

// TestWorkConcurrentUnits: goroutines beginning and ending units at once
// never take one another's entries.
func TestWorkConcurrentUnits(t *testing.T) {
	b := newBoard(t, 1)
	s := b.Slot(0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				tok := uint64(g*1000 + i + 1)
				w := s.Begin(uint64(g), tok, tok+500)
				if u, ok := b.AtWork(0).Unit(tok); !ok || u != uint16(g) {
					t.Errorf("token %d: unit %d, %v; want %d", tok, u, ok, g)
					return
				}
				w.End()
			}
		}()
	}
	wg.Wait()
	if a := b.AtWork(0); a.Units != nil || a.Missed != 0 {
		t.Fatalf("after every End = %+v, want nothing", a)
	}
}

func sorted(s []uint64) []uint64 { s = slices.Clone(s); slices.Sort(s); return s }
