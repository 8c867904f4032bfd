package supervisor

import (
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/front"
)

// frontBackend is what the front (supervisor/front) reads of the master.
type frontBackend struct{ m *Master }

var _ front.Backend = frontBackend{}

func (b frontBackend) Config() *config.Config     { return b.m.cfg() }
func (b frontBackend) Readiness() front.Readiness { return b.m.readiness() }

// readiness is what /v2/health/ready answers: ready while every pool has
// a serving worker (and, with strict_readiness, every model serves).
// Positions whose boots keep failing are listed either way, so a probe
// log shows them.
func (m *Master) readiness() front.Readiness {
	ph := m.phase.Load()
	ready, degraded := ph.Ready(), []string(nil)
	for _, p := range []*pool{m.infer, m.prep} {
		serving := false
		for _, s := range p.list() {
			serving = serving || s.Serving() != nil
			if s.Status().State == control.StateDegraded {
				degraded = append(degraded, s.Name())
			}
		}
		ready = ready && serving
	}
	r := front.Readiness{Degraded: degraded}
	if ph.LameDuck() {
		r.NotReady = "not ready: stopping (drain_grace); requests are still served until the drain"
	} else if !ready {
		r.NotReady = "not ready: a worker pool has no serving worker, or the master is starting or stopping"
	} else if stuck := m.arenasStuck(); stuck != "" {
		r.NotReady = stuck
	} else if m.cfg().StrictReadiness && !m.allModelsReady() {
		r.NotReady = "not ready (strict_readiness): a model is unavailable; see GET /v2/models/{m}/ready or supervisor status"
	}
	return r
}
