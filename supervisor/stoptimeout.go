package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/unitstop"
)

// unitReadTimeout bounds reading the unit over D-Bus: a start or a
// reload waits for it, and a bus that does not answer must not stall them.
const unitReadTimeout = 3 * time.Second

// checkStopTimeout compares the stop bound of cfg with the TimeoutStopSec
// of the systemd unit running this master (at start and after each
// reload: both may change) and keeps the outcome for status and STATUS=.
// It never fails: a warning or a unit it cannot read is logged, and the
// master serves on.
func (m *Master) checkStopTimeout(cfg *config.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), unitReadTimeout)
	defer cancel()
	u, err := m.opts.Unit.Unit(ctx)
	switch {
	case errors.Is(err, unitstop.ErrNotUnderSystemd):
		m.stopWarning.Store(nil)
		return
	case err != nil:
		m.stopWarning.Store(nil)
		m.log.Warn().Err(err).Dur("stop_bound", cfg.StopBound()).
			Msg("could not read the unit's TimeoutStopSec, so the stop bound is not checked against it")
		return
	}
	w := unitstop.Compare(u, cfg.StopBound())
	m.stopWarning.Store(w)
	if w != nil {
		m.log.Warn().Str("unit", u.Name).Dur("timeout_stop", u.TimeoutStop).Dur("stop_bound", w.Bound).
			Int64("needed_timeout_stop_sec", int64(w.Needed()/time.Second)).Msg(w.String())
	}
}

// warnings are the operator's to fix, none of which stops the master
// from serving: what status shows on its WARNING lines.
func (m *Master) warnings() []string {
	if w := m.stopWarning.Load(); w != nil {
		return []string{w.String()}
	}
	return nil
}
