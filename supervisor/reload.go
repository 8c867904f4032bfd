package supervisor

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/front"
	"github.com/supervisor-dev/supervisor/supervisor/publictls"
	"github.com/supervisor-dev/supervisor/supervisor/status"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
	"github.com/supervisor-dev/supervisor/worker"
)

// finishOp completes r with the outcome err at config generation gen.
func finishOp(r *control.OpResult, err error, gen int64) {
	r.OK, r.Generation, r.Took = err == nil, gen, time.Since(r.At).Round(time.Millisecond).String()
	if err != nil {
		r.Error = err.Error()
	}
}

// history keeps the last reload and upgrade outcomes.
type history struct {
	mu              sync.Mutex
	reload, upgrade *control.OpResult
	counts          status.OpCounts // every outcome, for /metrics
}

func (h *history) set(r control.OpResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts.Count(r)
	if r.Op == "upgrade" {
		h.upgrade = &r
	} else {
		h.reload = &r
	}
}

func (h *history) last() (reload, upgrade *control.OpResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reload, h.upgrade
}

// reloadQueue coalesces reloads: requests that arrive while one runs are
// all answered by the single reload that runs next, which reads the config
// as it is by then. Reloads never interleave.
type reloadQueue struct {
	mu      sync.Mutex
	running bool
	waiting []chan control.OpResult
}

func (q *reloadQueue) request(run func() control.OpResult) <-chan control.OpResult {
	ch := make(chan control.OpResult, 1)
	q.mu.Lock()
	q.waiting = append(q.waiting, ch)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.loop(run)
	}
	return ch
}

func (q *reloadQueue) loop(run func() control.OpResult) {
	for {
		q.mu.Lock()
		batch := q.waiting
		q.waiting = nil
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		res := run()
		for _, ch := range batch {
			ch <- res
		}
	}
}

// Reload re-reads and applies the config (SIGHUP, `supervisor reload`) and
// returns once the new generation serves. An invalid config changes
// nothing: the old one keeps serving and the error (with its file:line)
// is returned.
func (m *Master) Reload() control.OpResult { return <-m.reloads.request(m.reload) }

func (m *Master) reload() control.OpResult {
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	res := control.OpResult{Op: "reload", At: time.Now()}
	err := m.applyReload(&res)
	if err == nil {
		res.UnavailableModels = unavailableModels(m.modelStates())
		m.checkStopTimeout(m.cfg())
	}
	finishOp(&res, err, m.generation.Load())
	m.history.set(res)
	log := m.log.Info()
	if err != nil {
		log = m.log.Error().Err(err)
	}
	log.Int64("generation", res.Generation).Strs("replaced", res.Replaced).Strs("changed_in_place", res.ChangedInPlace).Strs("started", res.Started).
		Strs("stopped", res.Stopped).Strs("unavailable_models", res.UnavailableModels).Str("took", res.Took).Msg("reload finished")
	// Not once a stop began (drain_grace keeps ready): systemd has STOPPING=1.
	if m.phase.Load().AcceptsChanges() {
		notify("READY=1", m.statusLine())
	}
	return res
}

func (m *Master) applyReload(res *control.OpResult) error {
	if err := m.phase.Load().ChangeRefused(); err != nil {
		return fmt.Errorf("reload refused: %w", err)
	}
	if m.opts.Load == nil {
		return errors.New("this master was started without a config to reload")
	}
	notifyReloading()
	cfg, err := m.loadConfig() // the file, and the repository API's state over it
	if err != nil {
		return fmt.Errorf("the new config is invalid, the old one keeps serving:\n%w", err)
	}
	if err := reloadable(m.cfg(), cfg); err != nil {
		return err
	}
	// An autoscaled pool keeps the size it reached, within the new bounds.
	cfg.Prep.Workers = cfg.Prep.Count(len(m.prep.list()))
	if err := m.place(cfg); err != nil {
		return fmt.Errorf("the new config does not fit this host, the old one keeps serving:\n%w", err)
	}
	keys, err := admission.LoadKeys(cfg.Auth)
	if err != nil {
		return fmt.Errorf("the new config's API keys do not load, the old config keeps serving: %w", err)
	}
	applyTLS, err := m.tls.Reload(cfg)
	if err != nil {
		return err
	}
	old := m.cfg()
	m.generation.Add(1)
	m.conf.Store(cfg)
	m.repo.Commit(cfg)
	m.front.SetKeys(keys)
	applyTLS()
	m.applySettings(old, cfg)
	// Infer first: prep workers booted next get the new infer workers.
	err = m.reconcile(cfg, m.infer, res)
	if failed, others := splitLoadFailures(err); failed != nil {
		// Loads that fail change nothing: those models keep the config
		// their serving version was loaded with, and the infer workers
		// refused for them get the rest of the change.
		res.FailedModels = failed.Models
		cfg = withModelsOf(cfg, old, failed.Models)
		m.conf.Store(cfg)
		err = errors.Join(failed, others, m.reconcile(cfg, m.infer, res))
	}
	err = errors.Join(err, m.reconcile(cfg, m.prep, res))
	m.board.Stamp(m.generation.Load(), m.servingRecords())
	return err
}

// splitLoadFailures takes the *workers.LoadFailed errors out of a reconcile's
// error (one per refused position), merged into one; others is the rest.
func splitLoadFailures(err error) (failed *workers.LoadFailed, others error) {
	var rest []error
	var walk func(error)
	walk = func(err error) {
		var lf *workers.LoadFailed
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		} else if errors.As(err, &lf) {
			if failed == nil {
				failed = &workers.LoadFailed{Models: map[string]string{}}
			}
			maps.Copy(failed.Models, lf.Models)
		} else if err != nil {
			rest = append(rest, err)
		}
	}
	walk(err)
	return failed, errors.Join(rest...)
}

// withModelsOf returns cfg with the models named in names configured as
// in old (the config their serving version was loaded with); a model old
// does not have stays as cfg has it.
func withModelsOf(cfg, old *config.Config, names map[string]string) *config.Config {
	c := *cfg
	c.Models = slices.Clone(cfg.Models)
	for i, mc := range c.Models {
		if _, ok := names[mc.Name]; !ok {
			continue
		}
		for _, om := range old.Models {
			if om.Name == mc.Name {
				c.Models[i] = om
			}
		}
	}
	return &c
}

// reloadable rejects changes a running master cannot apply in place.
func reloadable(old, cfg *config.Config) error {
	var errs []error
	if old.Listen != cfg.Listen {
		errs = append(errs, fmt.Errorf("listen: changing it (%s to %s) needs `supervisor upgrade` or a restart; nothing was changed", old.Listen, cfg.Listen))
	}
	if old.Workers.User != cfg.Workers.User || old.Workers.Group != cfg.Workers.Group {
		errs = append(errs, fmt.Errorf("workers.user/group: changing them needs `supervisor upgrade` or a restart; nothing was changed"))
	}
	if old.RuntimeDir != cfg.RuntimeDir {
		errs = append(errs, fmt.Errorf("runtime_dir: changing it (%s to %s) needs a restart; nothing was changed", old.RuntimeDir, cfg.RuntimeDir))
	}
	if old.Limits.MaxHeaderBytes != cfg.Limits.MaxHeaderBytes {
		// fasthttp and gRPC size their servers' header buffers once, at start.
		errs = append(errs, fmt.Errorf("limits.max_header_bytes: changing it (%s to %s) needs `supervisor upgrade` or a restart: the public and gRPC servers read it at start; nothing was changed",
			old.Limits.MaxHeaderBytes, cfg.Limits.MaxHeaderBytes))
	}
	if old.Tracing != cfg.Tracing {
		// Every process starts its exporter at its start; the trace
		// settings (level, rate, count) change at run time through
		// /v2/trace/setting instead.
		errs = append(errs, fmt.Errorf("tracing: changing it needs `supervisor upgrade` or a restart (POST /v2/trace/setting changes trace_level, trace_rate and trace_count at run time); nothing was changed"))
	}
	if err := metricsReloadable(old, cfg); err != nil {
		errs = append(errs, err)
	}
	if err := grpcReloadable(old, cfg); err != nil {
		errs = append(errs, err)
	}
	if err := publictls.Reloadable(old, cfg); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// metricsReloadable rejects a reload that moves the metrics listener: the
// socket is held from startup (and handed over on upgrades).
func metricsReloadable(old, cfg *config.Config) error {
	if old.Metrics.Listen != cfg.Metrics.Listen {
		return fmt.Errorf("metrics.listen: changing it (%q to %q) needs `supervisor upgrade` or a restart; nothing was changed", old.Metrics.Listen, cfg.Metrics.Listen)
	}
	return nil
}

// applySettings applies what needs no new worker and is not read from the
// config per request: the lb's timeout, the log level when log_level
// changed from old's (supervisor/loglevel: else a level set through /v2/logging
// stays) and the master's memory limit (the body budget's).
func (m *Master) applySettings(old, cfg *config.Config) {
	m.proxy.SetTimeout(proxyTimeout(cfg))
	front.ApplyMemoryLimit(cfg)
	m.logs.Reload(old, cfg)
}

// reconcile brings a pool to cfg: positions whose worker spec changed get a
// surge-first replacement, the others only the new lifecycle; new positions
// boot; positions beyond the new size drain and stop.
func (m *Master) reconcile(cfg *config.Config, p *pool, res *control.OpResult) error {
	return m.reconcileSpecs(cfg, p, m.specs(cfg, p.role), res)
}

// resize brings a pool to cfg's count without touching the positions it
// keeps: they keep the templates they have (a model file touched since
// would otherwise replace them), so only the positions added or removed
// change. The autoscaler's resize (prepscale.go).
func (m *Master) resize(cfg *config.Config, p *pool, res *control.OpResult) error {
	specs := m.specs(cfg, p.role)
	p.mu.RLock()
	copy(specs, p.specs[:min(len(p.specs), len(specs))])
	p.mu.RUnlock()
	return m.reconcileSpecs(cfg, p, specs, res)
}

// reconcileSpecs is reconcile to the given templates, one per position.
func (m *Master) reconcileSpecs(cfg *config.Config, p *pool, specs []worker.Spec, res *control.OpResult) error {
	p.mu.Lock()
	if p.closed {
		// Shutdown has taken the position list: changing it now would leave
		// workers it does not know about running.
		p.mu.Unlock()
		return fmt.Errorf("%s pool: %w", p.role, workers.ErrStopping)
	}
	lc := workers.NewLifecycle(cfg, p.role, p.lc)
	keep := min(len(p.positions), len(specs))
	kept, removed := p.positions[:keep:keep], p.positions[keep:]
	oldSpecs := append([]worker.Spec(nil), p.specs[:keep]...)
	var added []*workers.Position
	for _, spec := range specs[keep:] {
		added = append(added, m.newPosition(spec, lc))
	}
	p.positions, p.specs, p.lc = append(kept, added...), specs, lc
	p.mu.Unlock()

	if len(removed) > 0 {
		m.upstreamsMu.Lock()
		m.propagate(p.role)
		m.upstreamsMu.Unlock()
		if p.role == worker.RolePrep {
			m.drainAll(removed, lc.RecycleDrain())
		}
		workers.StopAll(removed)
		for _, s := range removed {
			res.Stopped = append(res.Stopped, s.Name())
		}
	}

	errs := reconfigureKept(p, kept, oldSpecs, specs, lc, res)
	if err := workers.BootAll(added); err != nil {
		errs = append(errs, err)
	}
	for _, s := range added {
		select {
		case <-s.Done(): // its first boot failed: drop it
			p.remove(s)
		default:
			res.Started = append(res.Started, s.Name())
		}
	}
	return errors.Join(errs...)
}

// reconfigureKept gives each kept position its new template and lifecycle
// in parallel, replacing its worker where the spec changed; a position
// whose replacement fails keeps its old template. It returns one error
// per kept position (nil where it went well).
func reconfigureKept(p *pool, kept []*workers.Position, oldSpecs, specs []worker.Spec, lc *workers.Lifecycle, res *control.OpResult) []error {
	errs := make([]error, len(kept))
	var wg sync.WaitGroup
	for i, s := range kept {
		replace := !sameWorker(oldSpecs[i], specs[i])
		// Models only added or retired: the infer worker stays.
		inPlace := replace && workers.InPlace(oldSpecs[i], specs[i])
		switch {
		case inPlace:
			res.ChangedInPlace = append(res.ChangedInPlace, s.Name())
		case replace:
			res.Replaced = append(res.Replaced, s.Name())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = s.Reconfigure(workers.Reconfig{Tmpl: specs[i], LC: lc, Replace: replace && !inPlace, InPlace: inPlace}); errs[i] != nil {
				p.mu.Lock()
				p.specs[i] = oldSpecs[i]
				p.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// remove takes a position out of the pool.
func (p *pool) remove(s *workers.Position) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.positions {
		if x == s {
			p.positions = append(p.positions[:i:i], p.positions[i+1:]...)
			p.specs = append(p.specs[:i:i], p.specs[i+1:]...)
			return
		}
	}
}

// sameWorker reports whether two templates make interchangeable workers:
// equal but for the generation and what each process gets at spawn.
func sameWorker(a, b worker.Spec) bool {
	for _, s := range []*worker.Spec{&a, &b} {
		s.Generation, s.Socket, s.MaxRequests, s.InferSockets, s.BootTimeout = 0, "", 0, nil, 0
	}
	return reflect.DeepEqual(a, b)
}

// opCounts returns the reload and upgrade counts.
func (h *history) opCounts() status.OpCounts {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts
}
