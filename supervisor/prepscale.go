package supervisor

import (
	"fmt"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/autoscale"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/config/plan"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/prepload"
)

// prepScaler is the master's side of the autoscaler (supervisor/autoscale):
// it measures the prep stage from the scoreboard and /proc/stat, and
// resizes the prep pool through reconcile, the reload's resize. Its
// sample state belongs to the Scaler's goroutine.
type prepScaler struct {
	m     *Master
	meter prepload.Meter // the prep stage's load, sample by sample
}

var (
	_ autoscale.Sampler = (*prepScaler)(nil)
	_ autoscale.Pool    = (*prepScaler)(nil)
)

// Sample measures the prep stage since the previous call (see the
// autoscale package for what the load means).
func (s *prepScaler) Sample(now time.Time) (autoscale.Sample, error) {
	return s.meter.Sample(now, prepload.Pool{Board: s.m.board, Config: s.m.cfg, Workers: func() int { return len(s.m.prep.list()) },
		NextCPUs: s.m.nextPrepCPUs})
}

// Policy is the autoscaler's policy under the config in force.
func (s *prepScaler) Policy() (autoscale.Policy, bool) {
	p := s.m.cfg().Prep
	a := p.Autoscale
	return autoscale.Policy{Min: p.MinWorkers, Max: p.MaxWorkers, Interval: a.Interval.Duration,
		UpAfter: a.UpAfter.Duration, DownAfter: a.DownAfter.Duration, Cooldown: a.Cooldown.Duration,
		UpBusy: float64(a.UpBusy), DownBusy: float64(a.DownBusy), MinIdleCPUs: float64(a.MinIdleCPUs)}, p.Autoscaled()
}

// nextPrepCPUs are the CPUs the plan would give a pool of n+1 prep
// workers' last one; false when that does not fit the host.
func (m *Master) nextPrepCPUs(cfg *config.Config, n int) (affinity.CPUSet, bool) {
	if m.host == nil || n >= cfg.Prep.MaxWorkers {
		return affinity.CPUSet{}, false
	}
	p, err := plan.Place(cfg.WithPrepWorkers(n+1), m.host)
	if err != nil {
		return affinity.CPUSet{}, false
	}
	as := prepload.Assignments(p)
	if len(as) != n+1 {
		return affinity.CPUSet{}, false
	}
	return as[n].CPUs, true
}

// Resize brings the prep pool to n workers, the way a reload does:
// new positions boot (placed and pinned by the plan for n), surplus ones
// leave the lb, drain and stop; the kept ones keep their workers. It
// holds opsMu, so it never runs beside a reload, an upgrade or the end of
// a stop, and refuses (autoscale.ErrPaused) rather than wait for one.
func (s *prepScaler) Resize(n int, reason string) error {
	m := s.m
	if !m.opsMu.TryLock() {
		return fmt.Errorf("a reload or an upgrade is running: %w", autoscale.ErrPaused)
	}
	defer m.opsMu.Unlock()
	cfg := m.cfg()
	switch {
	case !m.phase.Load().AcceptsChanges():
		return fmt.Errorf("the master is starting, stopping or upgraded: %w", autoscale.ErrPaused)
	case !cfg.Prep.Autoscaled():
		return fmt.Errorf("a reload turned autoscaling off: %w", autoscale.ErrPaused)
	}
	m.log.Info().Int("to", n).Str("reason", reason).Msg("autoscale: resizing the prep pool")
	next := cfg.WithPrepWorkers(n)
	if err := m.place(next); err != nil {
		return fmt.Errorf("prep pool of %d workers: %w", n, err)
	}
	m.conf.Store(next)
	res := control.OpResult{Op: "autoscale"}
	err := m.resize(next, m.prep, &res)
	if have := len(m.prep.list()); have != n {
		// A new position failed its first boot and was dropped: keep the
		// config in force truthful about the pool.
		m.storePrepCount(next, have)
	}
	m.log.Info().Strs("started", res.Started).Strs("stopped", res.Stopped).Msg("autoscale: prep positions started and stopped")
	return err
}

// storePrepCount puts cfg with n prep workers in force.
func (m *Master) storePrepCount(cfg *config.Config, n int) {
	c := cfg.WithPrepWorkers(n)
	if err := m.place(c); err != nil {
		m.log.Error().Err(err).Int("workers", n).Msg("autoscale: could not re-plan the prep pool")
		return
	}
	m.conf.Store(c)
}

// autoscaleStatus is the autoscaler for status; nil while it is off.
func (m *Master) autoscaleStatus() *control.AutoscaleStatus {
	p := m.cfg().Prep
	if !p.Autoscaled() {
		return nil
	}
	st := m.scaler.State()
	out := &control.AutoscaleStatus{Workers: len(m.prep.list()), Min: p.MinWorkers, Max: p.MaxWorkers, Ups: st.Ups, Downs: st.Downs}
	if d := st.Last; d != nil {
		out.Last = &control.AutoscaleDecision{Direction: string(d.Direction), At: d.At, From: d.From, To: d.To,
			Reason: d.Reason, Error: st.Error}
	}
	return out
}
