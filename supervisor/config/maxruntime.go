package config

import (
	"fmt"
	"time"
)

// A model run's bound (models[].max_run_time, default infer.max_run_time):
// at it the infer worker tells ONNX Runtime to terminate the run, answers
// the batch's requests 500 and keeps serving; a run that does not stop
// within a grace after that makes the worker exit, so the master replaces
// it. Without a bound, a run that never ends (a Loop with a huge trip
// count, an input that makes a Range or Resize explode, a driver hang)
// holds its infer worker, its batch and its arena slots forever: the
// worker's heartbeats come from another goroutine and go on.
//
// infer.max_run_time 0 (the default) means half of prep.upstream_timeout,
// 30s with the default of 60s: a run of an interactive model takes
// milliseconds to a few seconds on a CPU or a GPU, 30s is far past any
// batch an operator would accept, and half leaves the other half of the
// prep worker's wait for the queue, so the client gets the run timeout's
// answer rather than the prep worker's 504 while the run goes on.

// minMaxRunTime is the shortest bound accepted: below it a warm-up run of
// an ordinary model would be terminated.
const minMaxRunTime = 10 * time.Millisecond

// MaxRunTime is model m's run bound: its own max_run_time, else
// infer.max_run_time, else half of prep.upstream_timeout.
func (c *Config) MaxRunTime(m ModelConfig) time.Duration {
	switch {
	case m.MaxRunTime.Duration > 0:
		return m.MaxRunTime.Duration
	case c.Infer.MaxRunTime.Duration > 0:
		return c.Infer.MaxRunTime.Duration
	}
	return c.Prep.UpstreamTimeout.Duration / 2
}

// maxRunTime validates one max_run_time at field: 0 (the default) or
// between minMaxRunTime and prep.upstream_timeout.
func (v *configValidator) maxRunTime(field string, d, upstream time.Duration) {
	switch {
	case d == 0:
	case d < minMaxRunTime:
		v.errorf(field, "%s is too short (at least %s; leave it out for half of prep.upstream_timeout)", Duration{d}, Duration{minMaxRunTime})
	case upstream > 0 && d >= upstream:
		v.errorf(field, "%s is not below prep.upstream_timeout (%s): the prep worker would answer 504 while the run goes on holding the infer worker; "+
			"lower it, or raise prep.upstream_timeout", Duration{d}, Duration{upstream})
	}
}

// maxRunTimes validates infer.max_run_time and every models[].max_run_time.
func (v *configValidator) maxRunTimes(c *Config) {
	upstream := c.Prep.UpstreamTimeout.Duration
	v.maxRunTime("infer.max_run_time", c.Infer.MaxRunTime.Duration, upstream)
	for i, m := range c.Models {
		v.maxRunTime(fmt.Sprintf("models[%d].max_run_time", i), m.MaxRunTime.Duration, upstream)
	}
}
