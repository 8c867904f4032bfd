package supervisor

import (
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/fdlimit"
)

// checkFDLimit logs a warning at start when the open-file limit is below
// what cfg (placed) may hold open at once (fdlimit). It never fails: the
// master serves on, and connections beyond the limit fail to accept.
func (m *Master) checkFDLimit(cfg *config.Config) {
	w, err := fdlimit.CheckProcess(fdlimit.ForPlan(cfg, cfg.Planned))
	switch {
	case err != nil:
		m.log.Warn().Err(err).Msg("the open-file limit is not checked against the connection limits")
	case w != nil:
		m.log.Warn().Uint64("nofile", w.Limit).Uint64("needed_nofile", w.Need()).Msg(w.String())
	}
}
