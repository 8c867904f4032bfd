package phase

import (
	"errors"
	"sync"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/workers"
)

var allPhases = []Phase{Starting, Serving, Upgrading, LameDuck, UpgradingLameDuck,
	Draining, UpgradingDraining, Aborting, HandedOver, Stopped}

// legalMoves is the transition table as phase.go's doc draws it, written
// out again: a change to the table must change this list too.
var legalMoves = map[[2]Phase]bool{
	{Starting, Serving}:                    true, // becomeReady
	{Starting, Aborting}:                   true, // a stop or a failure before serving
	{Serving, Upgrading}:                   true, // Upgrade
	{Serving, LameDuck}:                    true, // a stop with drain_grace
	{Serving, Draining}:                    true, // a stop without
	{Upgrading, Serving}:                   true, // the upgrade failed
	{Upgrading, UpgradingLameDuck}:         true,
	{Upgrading, UpgradingDraining}:         true,
	{Upgrading, HandedOver}:                true,
	{LameDuck, Draining}:                   true,
	{UpgradingLameDuck, LameDuck}:          true,
	{UpgradingLameDuck, UpgradingDraining}: true,
	{UpgradingLameDuck, HandedOver}:        true,
	{Draining, Stopped}:                    true,
	{UpgradingDraining, Draining}:          true,
	{UpgradingDraining, HandedOver}:        true,
	{Aborting, Stopped}:                    true,
}

// to is the step to one phase, whatever the current one.
func to(p Phase) func(Phase) Phase { return func(Phase) Phase { return p } }

// TestPhaseMoves: every legal move is accepted and lands where it says;
// every other move between two phases is refused and leaves the phase.
func TestPhaseMoves(t *testing.T) {
	if len(transitions) != len(allPhases) {
		t.Fatalf("transitions has %d phases, allPhases %d", len(transitions), len(allPhases))
	}
	for _, from := range allPhases {
		for _, next := range allPhases {
			if from == next {
				continue
			}
			s := State{p: from}
			left, now, err := s.Move(to(next))
			if left != from {
				t.Errorf("%s → %s: move says it left %s", from, next, left)
			}
			if legalMoves[[2]Phase{from, next}] {
				if err != nil || now != next || s.Load() != next {
					t.Errorf("%s → %s refused (%v) or landed in %s, want it accepted", from, next, err, s.Load())
				}
			} else if err == nil || now != from || s.Load() != from {
				t.Errorf("%s → %s accepted (now %s), want it refused and the Phase kept", from, next, s.Load())
			}
		}
	}
}

// TestPhaseSteps: each event leads, from each phase it can happen in,
// where the doc says; from the phases it cannot, the move is refused or
// changes nothing, as its caller relies on.
func TestPhaseSteps(t *testing.T) {
	const refused = Phase(-1)
	steps := []struct {
		name string
		step func(Phase) Phase
		want map[Phase]Phase // absent: refused
	}{
		{"ready", ToServing, map[Phase]Phase{Starting: Serving}},
		{"upgrade", ToUpgrading, map[Phase]Phase{Serving: Upgrading}},
		{"lame duck", ToLameDuck, map[Phase]Phase{Serving: LameDuck, Upgrading: UpgradingLameDuck,
			LameDuck: LameDuck, UpgradingLameDuck: UpgradingLameDuck}},
		{"drain", ToDraining, map[Phase]Phase{Starting: Aborting, Aborting: Aborting,
			Serving: Draining, LameDuck: Draining, Draining: Draining,
			Upgrading: UpgradingDraining, UpgradingLameDuck: UpgradingDraining,
			UpgradingDraining: UpgradingDraining, HandedOver: HandedOver}},
		{"upgraded", ToUpgraded(true), map[Phase]Phase{Upgrading: HandedOver,
			UpgradingLameDuck: HandedOver, UpgradingDraining: HandedOver}},
		{"upgrade failed", ToUpgraded(false), map[Phase]Phase{Upgrading: Serving,
			UpgradingLameDuck: LameDuck, UpgradingDraining: Draining}},
		{"stopped", ToStopped, map[Phase]Phase{Draining: Stopped, Aborting: Stopped,
			HandedOver: HandedOver, Stopped: Stopped}},
	}
	for _, st := range steps {
		for _, from := range allPhases {
			want, ok := st.want[from]
			if !ok {
				want = refused
			}
			s := State{p: from}
			_, now, err := s.Move(st.step)
			switch {
			case want == refused && err == nil:
				t.Errorf("%s from %s: moved to %s, want refused", st.name, from, now)
			case want != refused && (err != nil || now != want):
				t.Errorf("%s from %s: now %s (%v), want %s", st.name, from, now, err, want)
			}
		}
	}
}

// TestPhaseReachable: every phase can be reached from starting, and only
// handed over and stopped are terminal.
func TestPhaseReachable(t *testing.T) {
	seen := map[Phase]bool{Starting: true}
	for queue := []Phase{Starting}; len(queue) > 0; queue = queue[1:] {
		for _, next := range transitions[queue[0]] {
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	for _, p := range allPhases {
		if !seen[p] {
			t.Errorf("%s cannot be reached from starting", p)
		}
		terminal := len(transitions[p]) == 0
		if terminal != (p == HandedOver || p == Stopped) {
			t.Errorf("%s: terminal = %v", p, terminal)
		}
	}
}

// TestPhaseMeanings pins what each phase means to the rest of the master:
// the truth table of the booleans it replaces (ready, lameDucking,
// stopping, handingOver, tookOver via mayStopSockets).
func TestPhaseMeanings(t *testing.T) {
	type row struct{ ready, lameDuck, stopping, handingOver, changes, stopSockets, stopSocketsChild bool }
	want := map[Phase]row{
		Starting:          {false, false, false, false, false, true, false},
		Serving:           {true, false, false, false, true, true, true},
		Upgrading:         {true, false, false, true, true, false, false},
		LameDuck:          {true, true, true, false, false, true, true},
		UpgradingLameDuck: {true, true, true, true, false, false, false},
		Draining:          {false, false, true, false, false, true, true},
		UpgradingDraining: {false, false, true, true, false, false, false},
		Aborting:          {false, false, true, false, false, true, false},
		HandedOver:        {false, false, true, true, false, false, false},
		Stopped:           {false, false, true, false, false, true, true},
	}
	for _, p := range allPhases {
		got := row{p.Ready(), p.LameDuck(), p.Stopping(), p.HandingOver(), p.AcceptsChanges(),
			p.MayStopSockets(false), p.MayStopSockets(true)}
		if got != want[p] {
			t.Errorf("%s: %+v, want %+v", p, got, want[p])
		}
		if err := p.ChangeRefused(); (err == nil) != (p == Serving) {
			t.Errorf("%s: changeRefused = %v", p, err)
		}
		if p.Stopping() && p != HandedOver && !errors.Is(p.ChangeRefused(), workers.ErrStopping) {
			t.Errorf("%s: a change is refused with %v, want ErrStopping", p, p.ChangeRefused())
		}
	}
}

// TestStopAndUpgradeRace: a stop's drain and an upgrade's start race
// (the stop does not take opsMu). Either the upgrade is refused, or the
// drain finds it and keeps the sockets: never an upgrade that hands over
// sockets a drain already shut down, which the handingOver/stopping pair
// guarded by the order of its stores.
func TestStopAndUpgradeRace(t *testing.T) {
	for range 200 {
		s := State{p: Serving}
		var upErr error
		var drained Phase
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, _, upErr = s.Move(ToUpgrading) }()
		go func() { defer wg.Done(); _, drained, _ = s.Move(ToDraining) }()
		wg.Wait()
		if upErr == nil && drained.MayStopSockets(false) {
			t.Fatalf("the upgrade began and the drain (%s) may stop its sockets", drained)
		}
		if upErr != nil && drained != Draining {
			t.Fatalf("the upgrade was refused (%v) but the drain is in %s", upErr, drained)
		}
	}
}
