package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/phase"
	"github.com/supervisor-dev/supervisor/supervisor/unitstop"
)

// Upgrader hands listening sockets to a new binary and tells the old one
// when the new one is ready: the part of *tableflip.Upgrader a master uses.
type Upgrader interface {
	// Listen returns the listener inherited from the previous master for
	// this address, or a new one.
	Listen(network, addr string) (net.Listener, error)
	// HasParent reports whether this master was started by an upgrade.
	HasParent() bool
	// Ready tells the previous master that this one serves.
	Ready() error
	// Upgrade starts the new binary and waits until it is Ready or failed.
	Upgrade() error
	// WaitForParent waits until the previous master has exited.
	WaitForParent(ctx context.Context) error
	// Stop prevents further upgrades; the master is going away for good.
	Stop()
}

// noUpgrades serves without upgrades (tests, embedded masters).
type noUpgrades struct{}

func (noUpgrades) Listen(network, addr string) (net.Listener, error) {
	return net.Listen(network, addr)
}
func (noUpgrades) HasParent() bool                     { return false }
func (noUpgrades) Ready() error                        { return nil }
func (noUpgrades) WaitForParent(context.Context) error { return nil }
func (noUpgrades) Stop()                               {}
func (noUpgrades) Upgrade() error {
	return errors.New("this master was started without upgrade support")
}

// generationEnv carries the config generation to the master an upgrade
// starts, so that generations keep counting across binaries.
const generationEnv = "SUPERVISOR_GENERATION"

func generationFromEnv() int64 {
	if g, err := strconv.ParseInt(os.Getenv(generationEnv), 10, 64); err == nil && g > 0 {
		return g
	}
	return 1
}

// Upgrade starts the binary at this master's path (replaced on disk by the
// new build) with the same arguments; it inherits the listeners and the
// control socket, boots its own workers and reports ready. Then this
// master stops accepting, drains and exits (Run returns). If the new
// binary fails before it is ready, this master keeps serving and the
// error says why.
func (m *Master) Upgrade() error {
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	res := control.OpResult{Op: "upgrade", At: time.Now()}
	stopArrived, err := m.upgrade()
	finishOp(&res, err, m.generation.Load())
	if err == nil {
		res.NewPID = control.ReadPID(control.PIDFile(m.rd.Path()))
		m.log.Info().Int("new_pid", res.NewPID).Dur("took", time.Since(res.At)).Msg("upgrade: the new master serves; draining this one")
		if stopArrived {
			m.stopNewMaster()
		}
	} else {
		m.log.Error().Err(err).Msg("upgrade failed; this master keeps serving")
		notify(m.statusLine())
	}
	m.history.set(res)
	return err
}

// upgrade does the hand-over; stopArrived says whether a stop (or
// anything else that stops this master) came while the new binary booted:
// the phase it hands over from, read in the same move, or Stop called
// and not yet seen by the actors. (Its own stop, below, would look the same
// afterwards and stop the new master for nothing.)
func (m *Master) upgrade() (stopArrived bool, err error) {
	if from, _, err := m.phase.Move(phase.ToUpgrading); err != nil {
		return false, fmt.Errorf("upgrade refused: %w", from.ChangeRefused())
	}
	defer func() {
		if err != nil {
			m.moveOrLog(phase.ToUpgraded(false))
		}
	}()
	up := m.opts.Upgrader
	// The previous master must be gone before this one can hand over.
	wait := m.cfg().ShutdownTimeout.Duration + 30*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := up.WaitForParent(ctx); errors.Is(err, context.DeadlineExceeded) {
		return false, fmt.Errorf("the previous master has not exited after %s", wait)
	}
	os.Setenv(generationEnv, strconv.FormatInt(m.generation.Load()+1, 10))
	m.rd.HandOn()
	notify("STATUS=upgrading: starting the new binary")
	m.log.Info().Msg("upgrade: starting the new binary")
	if err = upgradeOnceParentGone(up); err != nil {
		return false, fmt.Errorf("the new binary did not become ready, this master keeps serving: %w", err)
	}
	from, _ := m.moveOrLog(phase.ToUpgraded(true))
	m.rd.Disown()
	// New control connections go to the new master from now on.
	_ = m.ctl.StopAccepting()
	stopArrived = m.stopRequested() || from.Stopping()
	m.Stop()
	return stopArrived, nil
}

// stopNewMaster passes on a stop that arrived while the new binary booted:
// it was meant for the instance, so the master that now serves it stops
// too, before this one answers the stop.
func (m *Master) stopNewMaster() {
	m.log.Warn().Msg("upgrade: a stop arrived while the new master booted; stopping it too")
	if _, err := control.Call(m.rd.Path(), "stop", unitstop.Needed(m.cfg().StopBound())); err != nil {
		m.log.Error().Err(err).Msg("upgrade: could not stop the new master; stop it with `supervisor stop`")
	}
}
