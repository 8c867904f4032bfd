package supervisor

import (
	"errors"
	"fmt"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
	"sync"
)

// phase is where the master is in its life: one value instead of the
// booleans (stopping, lameDucking, handingOver, tookOver, upgraded, ready)
// whose combinations nobody had written down.
//
//	a stop:       starting → aborting → stopped (it never served), or
//	              serving → [lameDuck →] draining → stopped
//	an upgrade:   serving → upgrading → handedOver, or back to serving
//	a stop during
//	an upgrade:   upgrading → [upgradingLameDuck →] upgradingDraining →
//	              handedOver, or back to lameDuck or draining
//
// transitions is the whole table; move refuses anything else.
//
// A stop and an upgrade overlap: a stop never waits for opsMu (an upgrade
// can take boot_timeout), so the upgrading* phases are the stop's phases
// while the new binary boots. Their sockets are, or may become, the new
// master's: a stop then must not shut them down.
//
// Reloads and resizes are not phases: they are operations under opsMu
// that run in serving and may overlap the start of a stop (a stop does
// not wait for them; it closes the pools, which cuts them short).
//
// What each phase means for the rest of the master is its methods:
// ready (what /v2/health/ready and status start from), stopping,
// lameDuck, handingOver, acceptsChanges, mayStopSockets.
type phase int32

const (
	// phaseStarting: the workers' first boots; not ready. With a parent
	// (started by an upgrade) the sockets are still the parent's.
	phaseStarting phase = iota
	// phaseServing: ready; reloads, upgrades and resizes may begin.
	phaseServing
	// phaseUpgrading: an upgrade is starting the new binary; this master
	// still serves and is ready.
	phaseUpgrading
	// phaseLameDuck: a stop's drain_grace (lameduck.go): everything is
	// served, /v2/health/ready answers 503.
	phaseLameDuck
	// phaseUpgradingLameDuck: a stop's drain_grace while an upgrade is
	// starting the new binary.
	phaseUpgradingLameDuck
	// phaseDraining: the front drains, then the workers stop.
	phaseDraining
	// phaseUpgradingDraining: draining while an upgrade is starting the
	// new binary: the sockets are kept for it.
	phaseUpgradingDraining
	// phaseAborting: stopping (a stop, or a failure) before the master
	// ever served: its first boots are cut short.
	phaseAborting
	// phaseHandedOver: the upgrade succeeded, the new master serves on
	// the same sockets; this one drains and exits in this phase, leaving
	// the sockets and further upgrades to the new one. Terminal.
	phaseHandedOver
	// phaseStopped: the workers are stopped and reaped; Run returns.
	// Terminal.
	phaseStopped
)

var phaseNames = [...]string{"starting", "serving", "upgrading", "lame duck", "upgrading in lame duck",
	"draining", "upgrading while draining", "aborting", "handed over", "stopped"}

func (p phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return fmt.Sprintf("phase(%d)", int(p))
	}
	return phaseNames[p]
}

// transitions lists, for each phase, the phases it may move to.
var transitions = map[phase][]phase{
	phaseStarting:          {phaseServing, phaseAborting},
	phaseServing:           {phaseUpgrading, phaseLameDuck, phaseDraining},
	phaseUpgrading:         {phaseServing, phaseUpgradingLameDuck, phaseUpgradingDraining, phaseHandedOver},
	phaseLameDuck:          {phaseDraining},
	phaseUpgradingLameDuck: {phaseLameDuck, phaseUpgradingDraining, phaseHandedOver},
	phaseDraining:          {phaseStopped},
	phaseUpgradingDraining: {phaseDraining, phaseHandedOver},
	phaseAborting:          {phaseStopped},
	phaseHandedOver:        nil,
	phaseStopped:           nil,
}

// allowed reports whether transitions lists from → to.
func allowed(from, to phase) bool {
	for _, p := range transitions[from] {
		if p == to {
			return true
		}
	}
	return false
}

// ready: becomeReady succeeded and the front has not begun to drain.
// (/v2/health/ready adds that every pool has a serving worker.)
func (p phase) ready() bool {
	return p == phaseServing || p == phaseUpgrading || p == phaseLameDuck || p == phaseUpgradingLameDuck
}

// lameDuck: a stop's drain_grace.
func (p phase) lameDuck() bool { return p == phaseLameDuck || p == phaseUpgradingLameDuck }

// stopping: a stop has begun (or the upgrade handed over, after which
// this master only drains).
func (p phase) stopping() bool {
	return p != phaseStarting && p != phaseServing && p != phaseUpgrading
}

// handingOver: an upgrade is starting the new binary, or has handed over
// to it; the listening sockets are, or may become, the new master's.
func (p phase) handingOver() bool {
	return p == phaseUpgrading || p == phaseUpgradingLameDuck || p == phaseUpgradingDraining || p == phaseHandedOver
}

// acceptsChanges: a reload, a resize or a repository change may begin.
// (Upgrading holds opsMu, so only the repository's reads see it.)
func (p phase) acceptsChanges() bool { return p == phaseServing || p == phaseUpgrading }

// mayStopSockets says whether a stop may shut the listening sockets down
// (internal/listenstop) rather than only close this master's
// descriptors. Not while an upgrade hands them over or after it did: they
// are, or will be, the new master's. Not in a master started by an
// upgrade (hasParent) that never served: one that fails to boot exits
// while its parent still serves on the same sockets.
func (p phase) mayStopSockets(hasParent bool) bool {
	if p.handingOver() {
		return false
	}
	served := p != phaseStarting && p != phaseAborting
	return served || !hasParent
}

// changeRefused is why a reload, upgrade or resize cannot begin in phase
// p; nil when it may.
func (p phase) changeRefused() error {
	switch {
	case p == phaseHandedOver:
		return errUpgraded
	case p.stopping():
		return workers.ErrStopping
	case p == phaseStarting:
		return errStarting
	case p == phaseUpgrading:
		return errors.New("an upgrade is running")
	}
	return nil
}

var (
	errUpgraded = errors.New("this master has been upgraded and is draining; use the new one")
	errStarting = errors.New("the master is still starting")
)

// phaseState is the master's phase, moved only by move.
type phaseState struct {
	mu sync.Mutex
	p  phase
}

// load returns the phase now.
func (s *phaseState) load() phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// move moves the master from the phase it is in to step(that phase),
// atomically, and returns the phase it left and the one it is in now. A step that leads where the
// master already is changes nothing (a drain of a master that handed
// over, or whose startup abort already moved it). A move the transitions
// table does not list is refused with an error that names both phases,
// and the phase is left as it was.
func (s *phaseState) move(step func(phase) phase) (from, now phase, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from = s.p
	to := step(from)
	if to == from {
		return from, from, nil
	}
	if to == phaseNone {
		return from, from, fmt.Errorf("that does not happen while the master is %s", from)
	}
	if !allowed(from, to) {
		return from, from, fmt.Errorf("the master cannot go from %s to %s", from, to)
	}
	s.p = to
	return from, to, nil
}

// moveOrLog is move for the steps that the table allows from every phase
// they can happen in: a refusal is a bug of the master's, logged, and
// the phase stays.
func (m *Master) moveOrLog(step func(phase) phase) (from, now phase) {
	from, now, err := m.phase.move(step)
	if err != nil {
		m.log.Error().Err(err).Msg("refused an illegal phase change")
	}
	return from, now
}

// The steps move takes: each says where an event leads from each phase,
// and phaseNone where it cannot happen.

// phaseNone is no phase: a step's answer where its event cannot happen.
const phaseNone phase = -1

// toServing: becomeReady succeeded.
func toServing(p phase) phase {
	if p == phaseStarting {
		return phaseServing
	}
	return phaseNone
}

// toUpgrading: an upgrade begins.
func toUpgrading(p phase) phase {
	if p == phaseServing {
		return phaseUpgrading
	}
	return phaseNone
}

// toLameDuck: a stop begins its drain_grace; only a ready master has
// one.
func toLameDuck(p phase) phase {
	switch p {
	case phaseServing, phaseLameDuck:
		return phaseLameDuck
	case phaseUpgrading, phaseUpgradingLameDuck:
		return phaseUpgradingLameDuck
	}
	return phaseNone
}

// toDraining: the front begins to drain (after a lame duck, on a stop
// without one, or when the actors end for another reason). The startup
// abort takes it too.
func toDraining(p phase) phase {
	switch p {
	case phaseStarting, phaseAborting:
		return phaseAborting
	case phaseUpgrading, phaseUpgradingLameDuck, phaseUpgradingDraining:
		return phaseUpgradingDraining
	case phaseServing, phaseLameDuck, phaseDraining:
		return phaseDraining
	case phaseHandedOver:
		return phaseHandedOver
	}
	return phaseNone
}

// toUpgraded: the upgrade ended, ok or not.
func toUpgraded(ok bool) func(phase) phase {
	return func(p phase) phase {
		if !p.handingOver() || p == phaseHandedOver {
			return phaseNone
		}
		if ok {
			return phaseHandedOver
		}
		switch p {
		case phaseUpgradingLameDuck:
			return phaseLameDuck
		case phaseUpgradingDraining:
			return phaseDraining
		}
		return phaseServing
	}
}

// toStopped: the workers are stopped. A master that handed over ends
// handed over.
func toStopped(p phase) phase {
	switch p {
	case phaseDraining, phaseAborting, phaseStopped:
		return phaseStopped
	case phaseHandedOver:
		return phaseHandedOver
	}
	return phaseNone
}
