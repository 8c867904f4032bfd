package shm

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestGuardTurnsTruncationIntoAnError truncates a board's file under its
// mapping: reading or writing it faults, and Guard turns each fault into
// ErrFault instead of a SIGBUS that kills the process. The board stays
// usable by nobody, but the process lives on.
func TestGuardTurnsTruncationIntoAnError(t *testing.T) {
	b := newBoard(t, 4)
	b.Slot(1).Claim(Identity{Role: "prep", Name: "prep-0", Spawned: time.Now()})
	if err := Guard(func() { _ = b.Snapshot() }); err != nil {
		t.Fatalf("Guard on an intact board: %v", err)
	}
	if err := os.Truncate(b.Path(), 0); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func(){
		"Snapshot":     func() { _ = b.Snapshot() },
		"SlotSnapshot": func() { _ = b.SlotSnapshot(3) },
		"Header":       func() { _ = b.Header() },
		"SetState":     func() { b.Slot(2).SetState(Dead) },
		"Claim":        func() { b.Slot(0).Claim(Identity{Role: "infer", Name: "infer-0"}) },
	}
	for name, op := range ops {
		if err := Guard(op); !errors.Is(err, ErrFault) {
			t.Errorf("%s on a truncated board: %v, want ErrFault", name, err)
		}
	}
}

// TestGuardLetsOtherPanicsThrough: Guard hides faults of a mapping, not
// bugs.
func TestGuardLetsOtherPanicsThrough(t *testing.T) {
	defer func() {
		if r := recover(); r != "a bug" {
			t.Fatalf("recovered %v, want the original panic", r)
		}
	}()
	_ = Guard(func() { panic("a bug") })
	t.Fatal("Guard swallowed a panic that was not a fault")
}

// TestGuardLetsNilDereferencesThrough: a nil pointer dereference is a bug
// too, not a fault of the mapping.
func TestGuardLetsNilDereferencesThrough(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("no panic for a nil dereference")
		}
	}()
	var p *Header
	err := Guard(func() { _ = p.Slots })
	t.Fatalf("Guard returned %v for a nil dereference, want the panic to go on", err)
}
