package supervisor

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/config/plan"
)

// place plans cfg on the master's host (read on first use) and keeps the
// plan in cfg for specs.
func (m *Master) place(cfg *config.Config) error {
	if m.host == nil {
		h := m.opts.Host
		if h == nil {
			var err error
			if h, err = plan.LoadHost("", affinity.NVML{}); err != nil {
				return err
			}
		}
		m.host = h
	}
	p, err := plan.Place(cfg, m.host)
	if err != nil {
		return err
	}
	if err := plan.CheckCeiling(cfg, m.host); err != nil {
		return err
	}
	cfg.Planned = p
	var rows []string
	for _, a := range p.Workers {
		rows = append(rows, fmt.Sprintf("%s %s cpus %s", a.Name, a.Device(), a.CPUs))
	}
	m.log.Info().Str("host", m.host.Describe()).Str("master_cpus", p.Reserved.String()).Strs("workers", rows).Msg("placement planned")
	return nil
}
