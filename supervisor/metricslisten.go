package supervisor

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/listenstop"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/metrics"
	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// listenMetrics opens the metrics listener (through the upgrader, so an
// upgrade hands it over) and its server (supervisor/metrics); nil when
// metrics.listen is "". stop shuts its socket down (internal/listenstop);
// it is nil-safe.
func (m *Master) listenMetrics() (srv *metrics.Server, stop *listenstop.Listener, err error) {
	addr := m.cfg().Metrics.Listen
	if addr == "" {
		return nil, nil, nil
	}
	ln, err := m.opts.Upgrader.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics listener on %q: %w (is another instance or Triton using it? set metrics.listen, or \"\" to turn it off)", addr, err)
	}
	stop = listenstop.Wrap(ln)
	return metrics.New(stop, metricsMaster{m}, m.board, m.log), stop, nil
}

// metricsMaster is what the metrics listener reads of the master.
type metricsMaster struct{ m *Master }

var _ metrics.Master = metricsMaster{}

func (s metricsMaster) Config() config.MetricsConfig                  { return s.m.cfg().Metrics }
func (s metricsMaster) Status() control.Status                        { return s.m.status() }
func (s metricsMaster) Scrape(gpus []affinity.GPUUsage) status.Scrape { return s.m.scrape(gpus) }
