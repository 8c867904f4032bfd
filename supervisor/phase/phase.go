package phase

import (
	"errors"
	"fmt"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
	"sync"
)

// Phase is where the master is in its life: one value instead of the
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
// transitions is the whole table; Move refuses anything else.
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
type Phase int32

const (
	// Starting: the workers' first boots; not ready. With a parent
	// (started by an upgrade) the sockets are still the parent's.
	Starting Phase = iota
	// Serving: ready; reloads, upgrades and resizes may begin.
	Serving
	// Upgrading: an upgrade is starting the new binary; this master
	// still serves and is ready.
	Upgrading
	// LameDuck: a stop's drain_grace (lameduck.go): everything is
	// served, /v2/health/ready answers 503.
	LameDuck
	// UpgradingLameDuck: a stop's drain_grace while an upgrade is
	// starting the new binary.
	UpgradingLameDuck
	// Draining: the front drains, then the workers stop.
	Draining
	// UpgradingDraining: draining while an upgrade is starting the
	// new binary: the sockets are kept for it.
	UpgradingDraining
	// Aborting: stopping (a stop, or a failure) before the master
	// ever served: its first boots are cut short.
	Aborting
	// HandedOver: the upgrade succeeded, the new master serves on
	// the same sockets; this one drains and exits in this phase, leaving
	// the sockets and further upgrades to the new one. Terminal.
	HandedOver
	// Stopped: the workers are stopped and reaped; Run returns.
	// Terminal.
	Stopped
)

var phaseNames = [...]string{"starting", "serving", "upgrading", "lame duck", "upgrading in lame duck",
	"draining", "upgrading while draining", "aborting", "handed over", "stopped"}

func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return fmt.Sprintf("phase(%d)", int(p))
	}
	return phaseNames[p]
}

// transitions lists, for each phase, the phases it may move to.
var transitions = map[Phase][]Phase{
	Starting:          {Serving, Aborting},
	Serving:           {Upgrading, LameDuck, Draining},
	Upgrading:         {Serving, UpgradingLameDuck, UpgradingDraining, HandedOver},
	LameDuck:          {Draining},
	UpgradingLameDuck: {LameDuck, UpgradingDraining, HandedOver},
	Draining:          {Stopped},
	UpgradingDraining: {Draining, HandedOver},
	Aborting:          {Stopped},
	HandedOver:        nil,
	Stopped:           nil,
}

// allowed reports whether transitions lists from → to.
func allowed(from, to Phase) bool {
	for _, p := range transitions[from] {
		if p == to {
			return true
		}
	}
	return false
}

// Ready: becomeReady succeeded and the front has not begun to drain.
// (/v2/health/ready adds that every pool has a serving worker.)
func (p Phase) Ready() bool {
	return p == Serving || p == Upgrading || p == LameDuck || p == UpgradingLameDuck
}

// LameDuck: a stop's drain_grace.
func (p Phase) LameDuck() bool { return p == LameDuck || p == UpgradingLameDuck }

// Stopping: a stop has begun (or the upgrade handed over, after which
// this master only drains).
func (p Phase) Stopping() bool {
	return p != Starting && p != Serving && p != Upgrading
}

// HandingOver: an upgrade is starting the new binary, or has handed over
// to it; the listening sockets are, or may become, the new master's.
func (p Phase) HandingOver() bool {
	return p == Upgrading || p == UpgradingLameDuck || p == UpgradingDraining || p == HandedOver
}

// AcceptsChanges: a reload, a resize or a repository change may begin.
// (Upgrading holds opsMu, so only the repository's reads see it.)
func (p Phase) AcceptsChanges() bool { return p == Serving || p == Upgrading }

// MayStopSockets says whether a stop may shut the listening sockets down
// (internal/listenstop) rather than only close this master's
// descriptors. Not while an upgrade hands them over or after it did: they
// are, or will be, the new master's. Not in a master started by an
// upgrade (hasParent) that never served: one that fails to boot exits
// while its parent still serves on the same sockets.
func (p Phase) MayStopSockets(hasParent bool) bool {
	if p.HandingOver() {
		return false
	}
	served := p != Starting && p != Aborting
	return served || !hasParent
}

// ChangeRefused is why a reload, upgrade or resize cannot begin in phase
// p; nil when it may.
func (p Phase) ChangeRefused() error {
	switch {
	case p == HandedOver:
		return errUpgraded
	case p.Stopping():
		return workers.ErrStopping
	case p == Starting:
		return errStarting
	case p == Upgrading:
		return errors.New("an upgrade is running")
	}
	return nil
}

var (
	errUpgraded = errors.New("this master has been upgraded and is draining; use the new one")
	errStarting = errors.New("the master is still starting")
)

// State is the master's phase, moved only by Move.
type State struct {
	mu sync.Mutex
	p  Phase
}

// Load returns the phase now.
func (s *State) Load() Phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// Move moves the master from the phase it is in to step(that phase),
// atomically, and returns the phase it left and the one it is in now. A step that leads where the
// master already is changes nothing (a drain of a master that handed
// over, or whose startup abort already moved it). A move the transitions
// table does not list is refused with an error that names both phases,
// and the phase is left as it was.
func (s *State) Move(step func(Phase) Phase) (from, now Phase, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from = s.p
	to := step(from)
	if to == from {
		return from, from, nil
	}
	if to == None {
		return from, from, fmt.Errorf("that does not happen while the master is %s", from)
	}
	if !allowed(from, to) {
		return from, from, fmt.Errorf("the master cannot go from %s to %s", from, to)
	}
	s.p = to
	return from, to, nil
}

// The steps Move takes: each says where an event leads from each phase,
// and None where it cannot happen.

// None is no phase: a step's answer where its event cannot happen.
const None Phase = -1

// ToServing: becomeReady succeeded.
func ToServing(p Phase) Phase {
	if p == Starting {
		return Serving
	}
	return None
}

// ToUpgrading: an upgrade begins.
func ToUpgrading(p Phase) Phase {
	if p == Serving {
		return Upgrading
	}
	return None
}

// ToLameDuck: a stop begins its drain_grace; only a ready master has
// one.
func ToLameDuck(p Phase) Phase {
	switch p {
	case Serving, LameDuck:
		return LameDuck
	case Upgrading, UpgradingLameDuck:
		return UpgradingLameDuck
	}
	return None
}

// ToDraining: the front begins to drain (after a lame duck, on a stop
// without one, or when the actors end for another reason). The startup
// abort takes it too.
func ToDraining(p Phase) Phase {
	switch p {
	case Starting, Aborting:
		return Aborting
	case Upgrading, UpgradingLameDuck, UpgradingDraining:
		return UpgradingDraining
	case Serving, LameDuck, Draining:
		return Draining
	case HandedOver:
		return HandedOver
	}
	return None
}

// ToUpgraded: the upgrade ended, ok or not.
func ToUpgraded(ok bool) func(Phase) Phase {
	return func(p Phase) Phase {
		if !p.HandingOver() || p == HandedOver {
			return None
		}
		if ok {
			return HandedOver
		}
		switch p {
		case UpgradingLameDuck:
			return LameDuck
		case UpgradingDraining:
			return Draining
		}
		return Serving
	}
}

// ToStopped: the workers are stopped. A master that handed over ends
// handed over.
func ToStopped(p Phase) Phase {
	switch p {
	case Draining, Aborting, Stopped:
		return Stopped
	case HandedOver:
		return HandedOver
	}
	return None
}
