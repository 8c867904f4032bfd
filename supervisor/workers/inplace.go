package workers

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/worker"
)

// InPlace reports whether a reload from old to next changes only which
// models an infer worker serves: models (or versions) added, or retired,
// while every model both list is configured exactly as before and every
// worker-wide setting is unchanged. Such a reload keeps the worker: it
// loads the added models and retires the others in place
// (Position.changeInPlace), so the models it serves never stop. Anything
// else (a model's file or settings changed, a worker-wide setting)
// replaces the worker, as before. Only what each process gets at spawn
// may differ besides, as sameWorker (supervisor/reload.go) allows.
func InPlace(old, next worker.Spec) bool {
	if old.Role != worker.RoleInfer || len(next.Models) == 0 {
		return false
	}
	a, b := old, next
	for _, s := range []*worker.Spec{&a, &b} {
		s.Generation, s.Socket, s.MaxRequests, s.InferSockets, s.BootTimeout = 0, "", 0, nil, 0
		s.Models, s.Unavailable = nil, nil
	}
	if !reflect.DeepEqual(a, b) {
		return false
	}
	for _, m := range next.Models {
		if i := slices.IndexFunc(old.Models, func(o worker.Model) bool { return o.Name == m.Name }); i >= 0 && !reflect.DeepEqual(old.Models[i], m) {
			return false
		}
	}
	return !reflect.DeepEqual(old.Models, next.Models)
}

// changeInPlace applies a reload that changes only p's models (InPlace):
// the position adopts r's template (a restart from now on boots the new
// models), tells the worker its new models, and waits for its answer,
// bounded by boot_timeout like a boot's loading. The master's view of the
// worker's models (Process.Models, its scoreboard record) and every prep
// worker's follow once it answered. While the added models load they are
// unavailable here ("loading"), so a request naming no version is not
// sent to a version not loaded yet.
//
// It returns nil once r is answered. When the worker died or did not
// answer (it is then killed) it returns r's channel: the position restarts
// the worker at once with the new models, and that boot's outcome answers
// the reload. A stop that arrives meanwhile answers r with ErrStopping;
// the serve loop then stops the worker.
func (s *Position) changeInPlace(p *Process, r Reconfig) chan error {
	s.tmpl, s.lc = r.Tmpl, r.LC
	ch := p.models.startChange(p.spec.Models, r.Tmpl.Models)
	ch.Unavailable = s.skippedModels(r.Tmpl.Models)
	type answer struct {
		sts []worker.ModelStatus
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		sts, err := worker.ChangeModels(p.spec.Socket, ch, s.lc.bootTimeout)
		answered <- answer{sts, err}
	}()
	select {
	case a := <-answered:
		if a.err == nil {
			// Prep workers first: once the master counts an added
			// version ready, a request naming no version may pick it.
			if s.hooks.ModelsChanged != nil {
				s.hooks.ModelsChanged(s)
			}
			p.models.finishChange(ch, a.sts)
			s.spawner.Board.SetModels(p.record, ch.Slots)
			s.logUnavailable(p)
			s.log.Info().Str("worker", s.name).Int("pid", p.PID()).Int("models", len(ch.Models)).
				Msg("models changed in place by a reload: the worker and the models it kept serve on")
			r.done <- nil
			return nil
		}
		// It died under the request (the connection broke), or did not
		// answer within boot_timeout: either way it is not serving its
		// new models.
		s.log.Error().Err(a.err).Str("worker", s.name).Int("pid", p.PID()).
			Msg("the worker did not take its new models in place: killing it if still running; it restarts with them")
		p.kill()
		return s.diedInPlace(p, r, func() error {
			if errors.Is(a.err, fasthttp.ErrTimeout) {
				return p.models.timedOut(p.PID(), s.lc.bootTimeout)
			}
			return p.models.diedBooting(p.PID(), describeExit(p.err))
		})
	case <-p.exited:
		return s.diedInPlace(p, r, func() error { return p.models.diedBooting(p.PID(), describeExit(p.err)) })
	case <-s.stop:
		r.done <- fmt.Errorf("%s: reload cut short while loading models in place: %w", s.name, ErrStopping)
		return nil
	}
}

// diedInPlace handles a worker that died, or was killed, while changing
// its models in place. When it was loading or warming up a model then
// (why, read once the worker's last events are, is a *warmupCrash), that
// model is skipped as a boot would skip it, so the restart does not die on
// it again. It returns r's channel, for the restart's boot to answer.
func (s *Position) diedInPlace(p *Process, r Reconfig, why func() error) chan error {
	select {
	case <-p.eventsRead:
	case <-time.After(time.Second):
	}
	var crash *warmupCrash
	if errors.As(why(), &crash) {
		s.skip(s.tmpl, crash)
	}
	s.exitedUnexpectedly(p)
	return r.done
}
