package workers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/procinfo"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/rundir"
	"github.com/supervisor-dev/supervisor/worker"
)

// Position states, as status reports them.
const (
	stateStarting   = "starting"
	stateReady      = "ready"
	stateRecycling  = "recycling" // ready, with its replacement booting
	stateRestarting = "restarting"
	stateDegraded   = control.StateDegraded // boot keeps failing; still retrying
	stateStopping   = "stopping"
	stateStopped    = "stopped"
)

// Lifecycle is how a pool's positions treat their workers.
type Lifecycle struct {
	bootTimeout      time.Duration
	stopDrain        time.Duration // on master stop
	recycleDrain     time.Duration // for a replaced worker
	heartbeatTimeout time.Duration
	backoffBase      time.Duration
	backoffMax       time.Duration
	degradedAfter    int
	recycle          config.Recycle
	// surge holds one token per replacement booting in the pool
	// (capacity max_surge).
	surge chan struct{}
}

// workerSocketName names a worker's socket after its master's pid (base 36
// to keep paths short), so that during an upgrade two masters' workers
// share the runtime dir without colliding: "<pid>.<position name>.<seq>.sock".
func workerSocketName(name string, seq int) string {
	return rundir.SocketPrefix() + name + "." + strconv.FormatInt(int64(seq), 36) + ".sock"
}

// backoffReset: a worker that stayed up this long restarts at base backoff.
const backoffReset = 10 * time.Second

// Hooks are what a position needs from the master.
type Hooks struct {
	// Prepare completes a spec just before its process is spawned (prep
	// workers get the current infer sockets, waiting for one up to the
	// spec's BootTimeout or until stop is closed).
	Prepare func(spec *worker.Spec, stop <-chan struct{})
	// Changed is called whenever the position's serving process changes.
	Changed func(*Position)
	// ModelsChanged, if set, is called when the serving process's models
	// changed in place (changeInPlace): its clients read them again.
	ModelsChanged func(*Position)
	// Retire drains a replaced process (bounded by drain) and stops it.
	Retire func(s *Position, p *Process, drain time.Duration)
	// Exited, if set, is told of each unexpected exit (the process,
	// reaped).
	Exited func(p *Process)
	// Room, if set, says whether a GPU worker's replacement fits in its
	// GPU's memory beside it; when it does not, the worker is replaced
	// drain-first (replace). nil: always surge-first.
	Room GPURoom
}

// Reconfig asks a position to adopt a new template and lifecycle (a reload).
type Reconfig struct {
	Tmpl worker.Spec
	LC   *Lifecycle
	// Replace: the worker's effective spec changed, so the serving worker
	// is replaced (surge-first, or drain-first when the GPU has no room
	// for both); otherwise only the next spawn uses Tmpl.
	Replace bool
	// InPlace: only the models changed, as InPlace allows: the serving
	// worker loads the added ones and retires the others (changeInPlace).
	InPlace bool
	done    chan error // buffered; nil once the position serves the new spec
}

// Position keeps one worker position (e.g. "prep-0") filled: it spawns the
// worker, waits for its readiness, restarts it with exponential backoff
// when it exits or hangs, and replaces it when it reaches a recycling
// limit: surge-first, or drain-first when its GPU has no room for two
// (replace.go). One goroutine (run) owns the processes; the mutex
// guards only what status and the lb read. Each process it spawns gets a
// record on the scoreboard of its own (board.claim); a position is
// neither that record nor an arena slot.
type Position struct {
	name string // e.g. "prep-0"; never changes
	role worker.Role
	// tmpl and lc belong to the run goroutine once the position has started; a
	// reload hands it new ones through reconf.
	tmpl    worker.Spec // Socket is filled per process
	lc      *Lifecycle
	dir     string // runtime dir
	spawner Spawner
	hooks   Hooks
	log     zerolog.Logger
	reconf  chan Reconfig

	// stop is closed (once, by requestStop) when the position must stop;
	// done is closed when the position's goroutine returns, or by start on a
	// position stopped before it started. Both exist from newPosition on, so a
	// stop that races a start (a reload adding positions while the master
	// shuts down) is never lost and never closes a channel twice.
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	retiring sync.WaitGroup

	mu       sync.Mutex
	started  bool // start was called; guarded by mu, read by stopAndWait
	state    string
	current  *Process // nil unless serving
	seq      int
	restarts int
	recycles int
	failures int // consecutive failed boots
	lastExit string
	// lastReplacement is how the serving worker last replaced its
	// predecessor; nil before any replacement.
	lastReplacement *control.Replacement
	// skipped are the models this position's workers died on, or were
	// killed on at boot_timeout, while loading or warming them up (see
	// warmupCrash), keyed by name; a model is skipped only while its spec
	// (path, file version, batching, warm-up...) is the one it died on,
	// and, for a timeout, boot_timeout is unchanged.
	skipped map[string]skippedModel
	// pending is a reload whose in-place change the worker died on (run
	// goroutine only): the restart's boot answers it.
	pending chan error
}

// skippedModel is a model a worker of the position died on.
type skippedModel struct {
	model       worker.Model
	bootTimeout time.Duration // the one it did not fit; 0 for a crash
	reason      string
}

func NewPosition(tmpl worker.Spec, lc *Lifecycle, dir string, sp Spawner, hooks Hooks, log zerolog.Logger) *Position {
	return &Position{name: tmpl.Name, role: tmpl.Role, tmpl: tmpl, lc: lc, dir: dir, spawner: sp,
		hooks: hooks, log: log, state: stateStarting, reconf: make(chan Reconfig),
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (s *Position) Status() control.WorkerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := control.WorkerStatus{Name: s.name, Role: string(s.role), State: s.state,
		Restarts: s.restarts, Recycles: s.recycles, LastExit: s.lastExit}
	if r := s.lastReplacement; r != nil {
		last := *r
		st.LastReplacement = &last
	}
	if p := s.current; p != nil {
		st.PID, st.Socket, st.RecycleAt, st.Generation = p.PID(), p.spec.Socket, p.spec.MaxRequests, int64(p.spec.Generation)
		st.Device, st.CPUs = p.spec.Device(), p.spec.CPUs
		if un, _ := p.models.snapshot(); len(un) > 0 {
			st.UnavailableModels = un
		}
	}
	return st
}

// Name is the position's name, e.g. "prep-0".
func (s *Position) Name() string { return s.name }

// Role is the role of the position's workers.
func (s *Position) Role() worker.Role { return s.role }

// Done is closed once the position has stopped for good (or its first
// boot failed).
func (s *Position) Done() <-chan struct{} { return s.done }

// Serving returns the process that takes traffic, or nil.
func (s *Position) Serving() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

func (s *Position) setState(state string) {
	s.mu.Lock()
	s.state = state
	s.mu.Unlock()
}

// setServing makes p the serving process and tells the master.
func (s *Position) setServing(state string, p *Process) {
	s.mu.Lock()
	s.state, s.current = state, p
	s.mu.Unlock()
	s.hooks.Changed(s)
}

// nextSpec is the spec of the position's next process: its own socket (so a
// replacement can listen while the old one serves), its own
// max_requests draw and the boot_timeout it must be ready within.
func (s *Position) nextSpec() worker.Spec {
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	spec := s.tmpl
	spec.Socket = filepath.Join(s.dir, workerSocketName(spec.Name, seq))
	if r := s.lc.recycle; r.MaxRequests > 0 {
		spec.MaxRequests = r.MaxRequests + rand.IntN(r.MaxRequestsJitter+1)
	}
	spec.BootTimeout = s.lc.bootTimeout
	if s.hooks.Prepare != nil {
		s.hooks.Prepare(&spec, s.stop)
	}
	spec.Unavailable = s.skippedModels(spec.Models)
	return spec
}

// errPositionStopped: the position was stopped before it could boot its worker.
var errPositionStopped = fmt.Errorf("stopped before its first boot: %w", ErrStopping)

// skippedModels returns, among models, those the position's workers died on
// and that have not changed since, with their reason; nil when none.
func (s *Position) skippedModels(models []worker.Model) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[string]string
	for _, m := range models {
		if sk, ok := s.skipped[m.Name]; ok && reflect.DeepEqual(sk.model, m) && (sk.bootTimeout == 0 || sk.bootTimeout == s.lc.bootTimeout) {
			if out == nil {
				out = map[string]string{}
			}
			out[m.Name] = sk.reason
		}
	}
	return out
}

// skip remembers that a worker died on crash.Model as the spec had it.
func (s *Position) skip(spec worker.Spec, crash *warmupCrash) {
	for _, m := range spec.Models {
		if m.Name != crash.Model {
			continue
		}
		s.mu.Lock()
		if s.skipped == nil {
			s.skipped = map[string]skippedModel{}
		}
		s.skipped[m.Name] = skippedModel{model: m, bootTimeout: crash.BootTimeout, reason: crash.reason()}
		s.mu.Unlock()
	}
	msg := "worker died while warming up a model: marking the model unavailable and booting again without it"
	if crash.BootTimeout > 0 {
		msg = "worker killed at boot_timeout while loading or warming up a model: marking the model unavailable and booting again without it"
	}
	s.log.Error().Str("worker", s.name).Int("pid", crash.PID).Str("model", crash.Model).Str("exit", crash.Exit).Msg(msg)
}

// Start runs the position in its own goroutine; the first boot's outcome goes
// to booted. A position already stopped does not start: booted gets
// errPositionStopped and done is closed.
func (s *Position) Start(booted chan<- error) {
	s.mu.Lock()
	s.started = true
	stopped := s.stopping()
	s.mu.Unlock()
	if stopped {
		s.setState(stateStopped)
		close(s.done)
		booted <- fmt.Errorf("worker %s: %w", s.name, errPositionStopped)
		return
	}
	go func() {
		defer close(s.done)
		s.run(booted)
	}()
}

// requestStop tells the position to stop; safe to call any number of times,
// from any goroutine.
func (s *Position) requestStop() { s.stopOnce.Do(func() { close(s.stop) }) }

// StopAndWait stops the position's worker (drained) and waits until it and any
// worker being retired are reaped. Safe on a position that was never started
// (it will not start afterwards), and safe to call concurrently or again.
func (s *Position) StopAndWait() {
	s.requestStop()
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return
	}
	<-s.done
	s.retiring.Wait()
}

func (s *Position) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// run keeps the position filled until stop is closed. A worker that cannot
// start at its first boot is a startup error for the master, reported on
// booted, not something to retry forever.
func (s *Position) run(booted chan<- error) {
	first := true
	backoff := s.lc.backoffBase
	var reloaded chan error // a reload waiting for the next boot's outcome
	for {
		s.setServing(s.bootingState(), nil)
		p, err := s.boot()
		if err == nil {
			// Serving (in the lb, or in every prep worker's upstreams)
			// before the first boot counts as done: the master reports
			// ready only after that.
			s.setServing(stateReady, p)
		}
		if first {
			booted <- err
			first = false
			if err != nil {
				s.setState(stateStopped)
				return
			}
		}
		if reloaded != nil {
			reloaded <- err
			reloaded = nil
		}
		if err == nil {
			since := time.Now()
			if s.serve(p) {
				s.setServing(stateStopped, nil)
				return
			}
			if time.Since(since) > backoffReset {
				backoff = s.lc.backoffBase
			}
			if s.pending != nil && !s.stopping() {
				// Died changing its models in place: boot the new
				// ones at once; that boot answers the reload.
				reloaded, s.pending = s.pending, nil
				continue
			}
		} else if s.stopping() {
			s.setState(stateStopped)
			return
		} else {
			s.bootFailed(err)
		}
		var next bool
		if next, reloaded = s.wait(backoff); !next {
			s.setState(stateStopped)
			return
		}
		backoff = min(2*backoff, s.lc.backoffMax)
	}
}

// wait sleeps d unless the position is stopped first; it reports whether the
// position should go on. A reload during the wait ends it early: the new spec
// boots at once, and the returned channel gets that boot's outcome.
func (s *Position) wait(d time.Duration) (bool, chan error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case r := <-s.reconf:
		s.tmpl, s.lc = r.Tmpl, r.LC
		return true, r.done
	case <-s.stop:
		return false, nil
	}
}

// Reconfigure hands the position a reload and waits until the position serves it:
// a replaced worker is ready, or a restarting position has booted the new
// spec. The error says why the position still runs its old worker.
func (s *Position) Reconfigure(r Reconfig) error {
	r.done = make(chan error, 1)
	select {
	case s.reconf <- r:
	case <-s.done:
		return fmt.Errorf("%s: %w", s.name, ErrStopping)
	}
	select {
	case err := <-r.done:
		return err
	case <-s.done:
		return fmt.Errorf("%s: stopped during the reload: %w", s.name, ErrStopping)
	}
}

// bootingState is starting, or degraded while boots keep failing.
func (s *Position) bootingState() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures >= s.lc.degradedAfter {
		return stateDegraded
	}
	return stateStarting
}

func (s *Position) bootFailed(err error) {
	s.mu.Lock()
	s.failures++
	degraded := s.failures >= s.lc.degradedAfter
	s.mu.Unlock()
	state := stateRestarting
	if degraded {
		state = stateDegraded
	}
	s.setState(state)
	s.log.Error().Err(err).Str("worker", s.name).Bool("degraded", degraded).Msg("worker failed to boot")
}

// boot spawns a process and waits for it to be ready. A worker that dies
// while warming up a model (warmupCrash) is booted again at once without
// that model: each retry skips one more model, so there are at most as
// many retries as models.
func (s *Position) boot() (*Process, error) {
	for range len(s.tmpl.Models) {
		spec := s.nextSpec()
		p, err := s.bootSpec(spec)
		var crash *warmupCrash
		if err == nil || !errors.As(err, &crash) || s.stopping() {
			return p, err
		}
		s.skip(spec, crash)
	}
	return s.bootSpec(s.nextSpec())
}

// bootSpec spawns a process for spec and waits for it to be ready.
func (s *Position) bootSpec(spec worker.Spec) (*Process, error) {
	p, err := s.spawner.Start(spec)
	if err != nil {
		return nil, err
	}
	s.log.Info().Str("worker", s.name).Int("pid", p.PID()).Str("socket", p.spec.Socket).Msg("worker spawned")
	ready := make(chan error, 1)
	go func() { ready <- p.waitReady(s.lc.bootTimeout) }()
	select {
	case err := <-ready:
		if err != nil {
			p.kill()
			return nil, fmt.Errorf("worker %s (pid %d): %w", s.name, p.PID(), err)
		}
		s.mu.Lock()
		s.failures = 0
		s.mu.Unlock()
		s.logUnavailable(p)
		return p, nil
	case <-s.stop:
		p.Stop(s.lc.stopDrain)
		return nil, fmt.Errorf("worker %s: stopped while booting", s.name)
	}
}

// logUnavailable logs, once per booted worker, each model it does not serve.
func (s *Position) logUnavailable(p *Process) {
	un, _ := p.models.snapshot()
	for name, reason := range un {
		s.log.Error().Str("worker", s.name).Int("pid", p.PID()).Str("model", name).Str("reason", reason).
			Msg("model unavailable: the worker serves its other models")
	}
}

// serve watches a ready process: it returns true when the position is stopped
// (the process drained and reaped), false when the process died or hung
// and must be restarted, or a drain-first replacement failed to boot.
// Recycling limits and reloads replace it without returning.
func (s *Position) serve(p *Process) (stopped bool) {
	check := time.NewTicker(max(s.lc.heartbeatTimeout/4, 25*time.Millisecond))
	defer check.Stop()
	lifetime := s.lifetimeTimer()
	var retry <-chan time.Time // a failed replacement is retried later
	retryDelay := s.lc.backoffBase
	for {
		var reason string
		select {
		case <-p.exited:
			s.exitedUnexpectedly(p)
			return false
		case <-s.stop:
			s.setServing(stateStopping, nil)
			p.Stop(s.lc.stopDrain)
			return true
		case reason = <-p.recycle:
		case <-lifetime:
			reason = fmt.Sprintf("ready for %s (max_lifetime)", s.lc.recycle.MaxLifetime)
		case <-retry:
			reason = "retrying a failed replacement"
		case r := <-s.reconf:
			if r.InPlace {
				if s.pending = s.changeInPlace(p, r); s.pending != nil {
					return false
				}
				continue
			}
			next, ok := s.applyReload(p, r)
			if next == nil { // replaced drain-first, and the new worker failed
				return s.stopping()
			}
			if ok {
				p = next
				lifetime = s.lifetimeTimer()
			}
			continue
		case now := <-check.C:
			if silent := p.silentFor(now); silent > s.lc.heartbeatTimeout {
				s.log.Error().Str("worker", s.name).Int("pid", p.PID()).Dur("silent", silent).
					Msg("worker stopped heart-beating: killing it")
				p.kill()
				continue // the exit is handled above
			}
			reason = s.overRSS(p)
		}
		if reason == "" {
			continue
		}
		next, gone, _ := s.replace(p, reason, nil)
		switch {
		case next != nil:
			p = next
			lifetime = s.lifetimeTimer()
			retry, retryDelay = nil, s.lc.backoffBase
		case gone: // drain-first, and the new worker failed: restart
			return s.stopping()
		case !s.stopping():
			retry = time.After(retryDelay)
			retryDelay = min(2*retryDelay, s.lc.backoffMax)
		}
	}
}

func (s *Position) lifetimeTimer() <-chan time.Time {
	if d := s.lc.recycle.MaxLifetime.Duration; d > 0 {
		return time.After(d)
	}
	return nil
}

// overRSS returns a recycle reason when p's resident memory is over
// max_rss_bytes, read from /proc (procinfo).
func (s *Position) overRSS(p *Process) string {
	limit := uint64(s.lc.recycle.MaxRSSBytes)
	if limit == 0 {
		return ""
	}
	info, err := procinfo.Read("", p.PID())
	if err != nil || info.RSS <= limit {
		return ""
	}
	return fmt.Sprintf("RSS %d bytes is over max_rss_bytes %d", info.RSS, limit)
}

// applyReload adopts r's template and lifecycle for a serving p. When the
// spec changed, p is replaced; if the replacement fails, the position
// keeps its old template, so later restarts stay on the config that
// works, and keeps p unless p was replaced drain-first. It returns the
// process serving afterwards (nil when none: p was stopped first and its
// replacement failed, and the run loop boots the old template again) and
// whether that is a new one.
func (s *Position) applyReload(p *Process, r Reconfig) (*Process, bool) {
	oldTmpl, oldLC := s.tmpl, s.lc
	s.tmpl, s.lc = r.Tmpl, r.LC
	if !r.Replace {
		r.done <- nil
		return p, false
	}
	next, gone, err := s.replace(p, "reload", keepsModels(p))
	if err == nil {
		r.done <- nil
		return next, true
	}
	s.tmpl, s.lc = oldTmpl, oldLC
	old := "the old one keeps serving"
	if gone {
		p, old = nil, "the old one was stopped first (drain-first: no GPU memory for both), so the old config boots again"
	}
	var failed *LoadFailed
	switch {
	case s.stopping():
		r.done <- fmt.Errorf("%s: reload cut short: %w", s.name, ErrStopping)
	case errors.As(err, &failed) && gone:
		r.done <- fmt.Errorf("%s: %w; %s", s.name, err, old)
	case errors.As(err, &failed):
		r.done <- fmt.Errorf("%s: %w", s.name, err)
	default:
		r.done <- fmt.Errorf("%s: the new worker failed to boot, %s: %w", s.name, old, err)
	}
	return p, false
}

func (s *Position) exitedUnexpectedly(p *Process) {
	how := describeExit(p.err)
	if s.hooks.Exited != nil {
		s.hooks.Exited(p)
	}
	s.mu.Lock()
	s.restarts++
	s.lastExit = how
	s.mu.Unlock()
	s.setServing(stateRestarting, nil)
	s.log.Error().Str("worker", s.name).Int("pid", p.PID()).Str("exit", how).Msg("worker exited unexpectedly; restarting")
}

// ErrStopping: the master is stopping, so a reload or a new worker
// position is refused; whatever the refused operation had started is
// stopped with the rest.
var ErrStopping = errors.New("the master is stopping")

// NewLifecycle is a pool's lifecycle under cfg. prev is the pool's
// current one (nil at start): its surge semaphore is kept unless
// max_surge changed, so a reload cannot let more replacements boot at
// once than allowed.
func NewLifecycle(cfg *config.Config, role worker.Role, prev *Lifecycle) *Lifecycle {
	w := cfg.Workers
	r := cfg.Prep.Recycle
	if role == worker.RoleInfer {
		r = cfg.Infer.Recycle
	}
	var surge chan struct{}
	if prev != nil {
		surge = prev.surge
	}
	if surge == nil || cap(surge) != w.MaxSurge {
		surge = make(chan struct{}, w.MaxSurge)
	}
	return &Lifecycle{
		bootTimeout:      cfg.BootTimeout.Duration,
		stopDrain:        cfg.ShutdownTimeout.Duration,
		recycleDrain:     w.DrainTimeout.Duration,
		heartbeatTimeout: w.HeartbeatTimeout.Duration,
		backoffBase:      w.RestartBackoff.Duration,
		backoffMax:       w.RestartBackoffMax.Duration,
		degradedAfter:    w.DegradedAfter,
		recycle:          r,
		surge:            surge,
	}
}

// RecycleDrain bounds the drain of a replaced or removed worker.
func (lc *Lifecycle) RecycleDrain() time.Duration { return lc.recycleDrain }

// BootAll starts every position and waits for each one's first boot; it
// returns the boot errors joined (the positions that did boot keep running
// until StopAll).
func BootAll(positions []*Position) error {
	booted := make(chan error, len(positions))
	for _, s := range positions {
		s.Start(booted)
	}
	var errs []error
	for range positions {
		if err := <-booted; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopAll stops positions in parallel and waits until their processes are reaped.
func StopAll(positions []*Position) {
	var wg sync.WaitGroup
	for _, s := range positions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.StopAndWait()
		}()
	}
	wg.Wait()
}
