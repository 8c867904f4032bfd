package config

import (
	"time"
)

// AutoscaleConfig tunes how the master grows and shrinks the prep pool
// between prep.min_workers and prep.max_workers (supervisor/autoscale
// states the signal and the rules). It is read at every sample, so a
// reload changes it in place.
type AutoscaleConfig struct {
	// Interval is how often the master samples the prep stage; it should
	// span a few requests' latencies, since the load is measured from the
	// requests that finish in it.
	Interval Duration `yaml:"interval"`
	// UpAfter: the pool grows by one worker when every sample of the
	// last UpAfter said prep is saturated and the new worker's CPUs are
	// free.
	UpAfter Duration `yaml:"up_after"`
	// DownAfter: the pool shrinks by one worker when every sample of the
	// last DownAfter said the workers left would still be idle enough.
	// Longer than UpAfter, so that a lull does not undo a grow.
	DownAfter Duration `yaml:"down_after"`
	// Cooldown is the least time between two decisions: long enough for
	// a new worker to boot and the samples to show its effect.
	Cooldown Duration `yaml:"cooldown"`
	// UpBusy is the load per prep CPU (requests in the prep stage, on
	// average, per CPU the pool runs on) at or above which prep counts
	// as saturated; DownBusy the load per CPU of one worker fewer below
	// which it counts as idle. DownBusy < UpBusy is the hysteresis.
	UpBusy   float32 `yaml:"up_busy"`
	DownBusy float32 `yaml:"down_busy"`
	// MinIdleCPUs is how many CPUs' worth of the new worker's CPUs must
	// have been idle over the last sample for it to be added (it would
	// otherwise take CPU time from what already runs there). 0 skips the
	// check.
	MinIdleCPUs float32 `yaml:"min_idle_cpus"`
}

func defaultAutoscale() AutoscaleConfig {
	return AutoscaleConfig{Interval: Duration{time.Second}, UpAfter: Duration{5 * time.Second},
		DownAfter: Duration{30 * time.Second}, Cooldown: Duration{10 * time.Second},
		UpBusy: 0.9, DownBusy: 0.4, MinIdleCPUs: 0.5}
}

// Autoscaled reports whether the master sizes the prep pool itself:
// prep.max_workers is set.
func (p PrepConfig) Autoscaled() bool { return p.MaxWorkers > 0 }

// Ceiling is the most prep workers the config may run: max_workers when
// autoscaled, else workers (0 while auto is unresolved).
func (p PrepConfig) Ceiling() int { return max(p.Workers, p.MaxWorkers) }

// Count is how many prep workers to run, given current ones now (0 at
// startup). Without autoscaling it is prep.workers. With it, a pool
// that runs keeps its size, brought within the bounds (a reload does not
// undo what the autoscaler did); a new one starts at prep.workers, or
// min_workers when that is auto.
func (p PrepConfig) Count(current int) int {
	switch {
	case !p.Autoscaled():
		return p.Workers
	case current > 0:
		return min(max(current, p.MinWorkers), p.MaxWorkers)
	case p.Workers > 0:
		return p.Workers
	}
	return p.MinWorkers
}

// autoscale checks prep.min_workers, prep.max_workers and prep.autoscale.
func (v *configValidator) autoscale(p PrepConfig) {
	if p.MaxWorkers < 0 || p.MaxWorkers > maxPrepWorkers {
		v.errorf("prep.max_workers", "%d is out of range (use 0 to turn autoscaling off, or 1 to %d)", p.MaxWorkers, maxPrepWorkers)
		return
	}
	if !p.Autoscaled() {
		return
	}
	if p.MinWorkers < 1 || p.MinWorkers > p.MaxWorkers {
		v.errorf("prep.min_workers", "%d is out of range (use 1 to prep.max_workers, %d)", p.MinWorkers, p.MaxWorkers)
	}
	if p.Workers != 0 && (p.Workers < p.MinWorkers || p.Workers > p.MaxWorkers) {
		v.errorf("prep.workers", "%d is outside prep.min_workers %d to prep.max_workers %d (use 0 to start at min_workers)", p.Workers, p.MinWorkers, p.MaxWorkers)
	}
	a := p.Autoscale
	for field, d := range map[string]Duration{"interval": a.Interval, "up_after": a.UpAfter, "down_after": a.DownAfter} {
		if d.Duration < 10*time.Millisecond {
			v.errorf("prep.autoscale."+field, "%s is too short (use at least 10ms, e.g. 1s)", d)
		}
	}
	if a.Cooldown.Duration < 0 {
		v.errorf("prep.autoscale.cooldown", "%s is negative (use 0 for none, or e.g. 10s)", a.Cooldown)
	}
	if a.DownBusy < 0 || a.UpBusy <= a.DownBusy {
		v.errorf("prep.autoscale.up_busy", "%g must be greater than down_busy %g, which must be 0 or more (e.g. 0.9 and 0.4)", a.UpBusy, a.DownBusy)
	}
	if a.MinIdleCPUs < 0 {
		v.errorf("prep.autoscale.min_idle_cpus", "%g is negative (use 0 to skip the check, or e.g. 0.5)", a.MinIdleCPUs)
	}
}

// WithPrepWorkers is a copy of c that runs n prep workers, unplanned: the
// config an autoscaler's resize puts in force. The copy shares c's
// read-only parts (models, origin).
func (c *Config) WithPrepWorkers(n int) *Config {
	d := *c
	d.Prep.Workers, d.Planned = n, nil
	return &d
}
