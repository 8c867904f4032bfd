package supervisor

import (
	"errors"
	"sync"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/workers"
)

var allPhases = []phase{phaseStarting, phaseServing, phaseUpgrading, phaseLameDuck, phaseUpgradingLameDuck,
	phaseDraining, phaseUpgradingDraining, phaseAborting, phaseHandedOver, phaseStopped}

// legalMoves is the transition table as phase.go's doc draws it, written
// out again: a change to the table must change this list too.
var legalMoves = map[[2]phase]bool{
	{phaseStarting, phaseServing}:                    true, // becomeReady
	{phaseStarting, phaseAborting}:                   true, // a stop or a failure before serving
	{phaseServing, phaseUpgrading}:                   true, // Upgrade
	{phaseServing, phaseLameDuck}:                    true, // a stop with drain_grace
	{phaseServing, phaseDraining}:                    true, // a stop without
	{phaseUpgrading, phaseServing}:                   true, // the upgrade failed
	{phaseUpgrading, phaseUpgradingLameDuck}:         true,
	{phaseUpgrading, phaseUpgradingDraining}:         true,
	{phaseUpgrading, phaseHandedOver}:                true,
	{phaseLameDuck, phaseDraining}:                   true,
	{phaseUpgradingLameDuck, phaseLameDuck}:          true,
	{phaseUpgradingLameDuck, phaseUpgradingDraining}: true,
	{phaseUpgradingLameDuck, phaseHandedOver}:        true,
	{phaseDraining, phaseStopped}:                    true,
	{phaseUpgradingDraining, phaseDraining}:          true,
	{phaseUpgradingDraining, phaseHandedOver}:        true,
	{phaseAborting, phaseStopped}:                    true,
}

// to is the step to one phase, whatever the current one.
func to(p phase) func(phase) phase { return func(phase) phase { return p } }

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
			s := phaseState{p: from}
			left, now, err := s.move(to(next))
			if left != from {
				t.Errorf("%s → %s: move says it left %s", from, next, left)
			}
			if legalMoves[[2]phase{from, next}] {
				if err != nil || now != next || s.load() != next {
					t.Errorf("%s → %s refused (%v) or landed in %s, want it accepted", from, next, err, s.load())
				}
			} else if err == nil || now != from || s.load() != from {
				t.Errorf("%s → %s accepted (now %s), want it refused and the phase kept", from, next, s.load())
			}
		}
	}
}

// TestPhaseSteps: each event leads, from each phase it can happen in,
// where the doc says; from the phases it cannot, the move is refused or
// changes nothing, as its caller relies on.
func TestPhaseSteps(t *testing.T) {
	const refused = phase(-1)
	steps := []struct {
		name string
		step func(phase) phase
		want map[phase]phase // absent: refused
	}{
		{"ready", toServing, map[phase]phase{phaseStarting: phaseServing}},
		{"upgrade", toUpgrading, map[phase]phase{phaseServing: phaseUpgrading}},
		{"lame duck", toLameDuck, map[phase]phase{phaseServing: phaseLameDuck, phaseUpgrading: phaseUpgradingLameDuck,
			phaseLameDuck: phaseLameDuck, phaseUpgradingLameDuck: phaseUpgradingLameDuck}},
		{"drain", toDraining, map[phase]phase{phaseStarting: phaseAborting, phaseAborting: phaseAborting,
			phaseServing: phaseDraining, phaseLameDuck: phaseDraining, phaseDraining: phaseDraining,
			phaseUpgrading: phaseUpgradingDraining, phaseUpgradingLameDuck: phaseUpgradingDraining,
			phaseUpgradingDraining: phaseUpgradingDraining, phaseHandedOver: phaseHandedOver}},
		{"upgraded", toUpgraded(true), map[phase]phase{phaseUpgrading: phaseHandedOver,
			phaseUpgradingLameDuck: phaseHandedOver, phaseUpgradingDraining: phaseHandedOver}},
		{"upgrade failed", toUpgraded(false), map[phase]phase{phaseUpgrading: phaseServing,
			phaseUpgradingLameDuck: phaseLameDuck, phaseUpgradingDraining: phaseDraining}},
		{"stopped", toStopped, map[phase]phase{phaseDraining: phaseStopped, phaseAborting: phaseStopped,
			phaseHandedOver: phaseHandedOver, phaseStopped: phaseStopped}},
	}
	for _, st := range steps {
		for _, from := range allPhases {
			want, ok := st.want[from]
			if !ok {
				want = refused
			}
			s := phaseState{p: from}
			_, now, err := s.move(st.step)
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
	seen := map[phase]bool{phaseStarting: true}
	for queue := []phase{phaseStarting}; len(queue) > 0; queue = queue[1:] {
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
		if terminal != (p == phaseHandedOver || p == phaseStopped) {
			t.Errorf("%s: terminal = %v", p, terminal)
		}
	}
}

// TestPhaseMeanings pins what each phase means to the rest of the master:
// the truth table of the booleans it replaces (ready, lameDucking,
// stopping, handingOver, tookOver via mayStopSockets).
func TestPhaseMeanings(t *testing.T) {
	type row struct{ ready, lameDuck, stopping, handingOver, changes, stopSockets, stopSocketsChild bool }
	want := map[phase]row{
		phaseStarting:          {false, false, false, false, false, true, false},
		phaseServing:           {true, false, false, false, true, true, true},
		phaseUpgrading:         {true, false, false, true, true, false, false},
		phaseLameDuck:          {true, true, true, false, false, true, true},
		phaseUpgradingLameDuck: {true, true, true, true, false, false, false},
		phaseDraining:          {false, false, true, false, false, true, true},
		phaseUpgradingDraining: {false, false, true, true, false, false, false},
		phaseAborting:          {false, false, true, false, false, true, false},
		phaseHandedOver:        {false, false, true, true, false, false, false},
		phaseStopped:           {false, false, true, false, false, true, true},
	}
	for _, p := range allPhases {
		got := row{p.ready(), p.lameDuck(), p.stopping(), p.handingOver(), p.acceptsChanges(),
			p.mayStopSockets(false), p.mayStopSockets(true)}
		if got != want[p] {
			t.Errorf("%s: %+v, want %+v", p, got, want[p])
		}
		if err := p.changeRefused(); (err == nil) != (p == phaseServing) {
			t.Errorf("%s: changeRefused = %v", p, err)
		}
		if p.stopping() && p != phaseHandedOver && !errors.Is(p.changeRefused(), workers.ErrStopping) {
			t.Errorf("%s: a change is refused with %v, want ErrStopping", p, p.changeRefused())
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
		s := phaseState{p: phaseServing}
		var upErr error
		var drained phase
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, _, upErr = s.move(toUpgrading) }()
		go func() { defer wg.Done(); _, drained, _ = s.move(toDraining) }()
		wg.Wait()
		if upErr == nil && drained.mayStopSockets(false) {
			t.Fatalf("the upgrade began and the drain (%s) may stop its sockets", drained)
		}
		if upErr != nil && drained != phaseDraining {
			t.Fatalf("the upgrade was refused (%v) but the drain is in %s", upErr, drained)
		}
	}
}
