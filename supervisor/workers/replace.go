package workers

import (
	"fmt"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// GPURoom is what a position asks before it boots a GPU worker's
// replacement on the same GPU: whether a process as large as pid fits in
// device's free memory beside it. why says what the answer rests on (the
// figures, or why there were none). affinity.GPURoom answers it over NVML.
type GPURoom interface {
	Fits(device string, pid int) (ok bool, why string)
}

// stateDraining: the position's worker is out of service and draining,
// before its replacement boots (drain-first).
const stateDraining = "draining"

// replace replaces old, the serving worker, for reason, and returns the
// successor, which serves.
//
// Surge-first, the default, it boots the successor while old keeps
// serving, swaps it in and hands old to the master to drain and stop
// (Retire). When the successor fails to boot, or accept (if not nil)
// refuses it, old keeps serving and replace returns the error.
//
// Drain-first, when old is a GPU worker whose replacement would not fit in
// its GPU's memory beside it (replaceMode), it takes old out of service,
// drains and stops it, and only then boots the successor: meanwhile the
// prep workers send requests to the other infer workers, and with none
// left they answer 503 with Retry-After. gone is then true: old no longer
// runs, so when the successor fails the position has no worker, and its
// run loop boots one again.
func (s *Position) replace(old *Process, reason string, accept func(*Process) error) (next *Process, gone bool, err error) {
	log := s.log.With().Str("worker", s.name).Int("pid", old.PID()).Str("reason", reason).Logger()
	select {
	case s.lc.surge <- struct{}{}:
	case <-s.stop:
		return nil, false, fmt.Errorf("%s: %w", s.name, ErrStopping)
	}
	defer func() { <-s.lc.surge }()
	mode, why := s.replaceMode(old)
	s.mu.Lock()
	s.lastReplacement = &control.Replacement{Mode: mode, Reason: reason, Why: why, At: time.Now()}
	s.mu.Unlock()
	switch {
	case mode == control.ReplaceDrainFirst:
		log.Warn().Str("gpu", old.spec.GPU).
			Msgf("replacement would not fit GPU memory (%s): replacing drain-first", why)
		s.setServing(stateDraining, nil) // out of every prep worker's upstreams
		// Synchronously: the GPU memory is free once old has exited.
		s.retireFirst(old)
		gone = true
		if s.stopping() {
			// A stop came during the drain: the position has no worker
			// now, and a replacement would only load its model (on a
			// GPU, seconds to minutes) to be stopped again.
			log.Info().Msg("stopped during a drain-first replacement: the old worker drained, no replacement booted")
			return nil, true, fmt.Errorf("%s: %w", s.name, ErrStopping)
		}
		s.setState(s.bootingState())
	case why != "":
		log.Info().Str("gpu", old.spec.GPU).Str("gpu_memory", why).Msg("recycling: booting a replacement beside the worker")
		s.setState(stateRecycling)
	default:
		log.Info().Msg("recycling: booting a replacement")
		s.setState(stateRecycling)
	}
	next, err = s.boot()
	if err == nil && accept != nil {
		if err = accept(next); err != nil {
			next.kill() // it never served: nothing routes to it
		}
	}
	switch {
	case err != nil && gone && s.stopping():
		log.Info().Err(err).Msg("stopped while the replacement booted (drain-first)")
		return nil, true, err
	case err != nil && gone:
		log.Error().Err(err).Msg("replacement failed after the old worker was stopped (drain-first); restarting")
		s.setState(stateRestarting)
		return nil, true, err
	case err != nil:
		log.Error().Err(err).Msg("replacement failed to boot; the old worker keeps serving")
		s.setState(stateReady)
		return nil, false, err
	}
	s.mu.Lock()
	s.recycles++
	s.mu.Unlock()
	s.setServing(stateReady, next)
	if gone {
		log.Info().Int("new_pid", next.PID()).Msg("replacement serving (drain-first)")
		return next, true, nil
	}
	log.Info().Int("new_pid", next.PID()).Msg("replacement serving; draining the old worker")
	s.retiring.Add(1)
	drain := s.lc.recycleDrain
	go func() {
		defer s.retiring.Done()
		s.hooks.Retire(s, old, drain)
	}()
	return next, false, nil
}

// retireFirst retires old before its replacement boots (drain-first) and
// waits until it has exited: its drain is bounded by drain_timeout
// (recycleDrain), and, once the position is stopped, by shutdown_timeout
// (stopDrain) from the stop, as a serving worker's stop is; old is then
// killed. Without the second bound a stop during the drain waited for
// the rest of drain_timeout, which the stop bound (config.StopBound)
// does not count.
func (s *Position) retireFirst(old *Process) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.hooks.Retire(s, old, s.lc.recycleDrain)
	}()
	select {
	case <-done:
		return
	case <-s.stop:
	}
	t := time.NewTimer(s.lc.stopDrain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn().Str("worker", s.name).Int("pid", old.PID()).Dur("shutdown_timeout", s.lc.stopDrain).
			Msg("stopped during a drain-first replacement: the old worker's drain outlasted shutdown_timeout; killing it")
		old.kill()
		<-done
	}
}

// replaceMode is how old is to be replaced: drain-first when it is a GPU
// worker whose replacement boots on the same GPU and Hooks.Room says a
// second one would not fit there; surge otherwise (a CPU worker, no Room,
// a reload that moves the worker to another device, or a GPU with room).
// why is the Room's word.
func (s *Position) replaceMode(old *Process) (mode, why string) {
	gpu := old.spec.GPU
	if s.hooks.Room == nil || gpu == "" || s.tmpl.GPU != gpu {
		return control.ReplaceSurge, ""
	}
	ok, why := s.hooks.Room.Fits(gpu, old.PID())
	if !ok {
		return control.ReplaceDrainFirst, why
	}
	return control.ReplaceSurge, why
}
