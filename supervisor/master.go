package supervisor

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/modelid"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/autoscale"
	"github.com/supervisor-dev/supervisor/supervisor/board"
	"github.com/supervisor-dev/supervisor/supervisor/cachesegs"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/config/plan"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/controlserver"
	"github.com/supervisor-dev/supervisor/supervisor/front"
	"github.com/supervisor-dev/supervisor/supervisor/loglevel"
	"github.com/supervisor-dev/supervisor/supervisor/phase"
	"github.com/supervisor-dev/supervisor/supervisor/publictls"
	"github.com/supervisor-dev/supervisor/supervisor/quarantine"
	"github.com/supervisor-dev/supervisor/supervisor/repository"
	"github.com/supervisor-dev/supervisor/supervisor/rundir"
	"github.com/supervisor-dev/supervisor/supervisor/unitstop"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
	"github.com/supervisor-dev/supervisor/supervisor/workerspec"
	"github.com/supervisor-dev/supervisor/worker"
)

// Master is a running supervisor instance.
type Master struct {
	conf    atomic.Pointer[config.Config]
	opts    Options
	log     zerolog.Logger
	proxy   *lb.Proxy
	spawner workers.Spawner
	rd      *rundir.Dir
	ctl     *controlserver.Server

	infer, prep *pool
	// modelIDs are the model files' content identities (modelSpecs).
	modelIDs modelid.Cache
	// phase is where the master is: starting, serving, upgrading, lame
	// duck, draining, handed over, stopped (supervisor/phase). It decides what
	// /v2/health/ready starts from (the gate of inference routes is the
	// front's SetServing), which reloads and upgrades may begin, and
	// whether a stop may shut the sockets down.
	phase   phase.State
	started time.Time

	// front is the public listener's server (supervisor/front): its
	// admission, API keys, body budget and the serving gate.
	front *front.Front

	// upstreamsMu serialises position changes, so that pushes of the infer
	// worker list to prep workers cannot overtake each other. Taken
	// before poolsMu, never after.
	upstreamsMu sync.Mutex
	// inferChanged is closed, and replaced, whenever an infer position's
	// serving process changes: a prep worker about to spawn with no infer
	// worker serving waits on it (prepSockets). Guarded by inferChangedMu.
	inferChangedMu sync.Mutex
	inferChanged   chan struct{}

	// opsMu serialises reloads, upgrades and the end of shutdown;
	// generation counts the configs applied (1 = the first; one more per
	// reload that passes its checks, even if some workers then fail to
	// boot; an upgraded master continues its parent's, generationEnv).
	// Every worker is spawned with its spec's generation and the
	// scoreboard's header carries the one in force, so an older record is
	// recognisably stale. Reloads and upgrades that begin once shutdown
	// has begun (phase.Stopping) are refused with workers.ErrStopping.
	opsMu      sync.Mutex
	generation atomic.Int64
	// inferCrashes and prepCrashes are when an infer or a prep worker
	// last crashed on its own, for the front's poison quarantine
	// (supervisor/workers crashlog.go).
	inferCrashes *workers.CrashLog
	prepCrashes  *workers.CrashLog
	reloads      reloadQueue
	history      history
	// repo is the repository API and its state over the config file
	// (supervisor/repository): the config served is made from both.
	repo *repository.API
	// logs answers /v2/logging (supervisor/loglevel).
	logs *loglevel.Levels
	// tracing is the master's span exporter and trace settings
	// (tracing.go); nil when the config has no tracing.endpoint.
	tracing *front.Tracing

	stopOnce sync.Once
	stopCh   chan struct{}
	// skipGrace is closed by a second Stop to end drain_grace early
	// (lameduck.go).
	skipOnce  sync.Once
	skipGrace chan struct{}

	// grpc is the gRPC listener (grpc.go); nil when grpc.listen is "".
	grpc *grpcListener
	// tls is the public listeners' certificates (publictls); nil when
	// tls is off.
	tls *publictls.Listeners

	// board is this master's scoreboard (nil without /dev/shm).
	board *board.Board
	// caches are the models' response cache segments (supervisor/cachesegs).
	caches cachesegs.Set
	// host is the machine placement plans against, read once (place).
	host *plan.Host
	// scaler sizes the prep pool between prep.min_workers and
	// max_workers (prepscale.go); it idles while autoscaling is off.
	scaler *autoscale.Scaler
	// stopWarning: the systemd unit's TimeoutStopSec does not cover the
	// config's stop bound (stoptimeout.go); nil when it does or no unit
	// applies.
	stopWarning atomic.Pointer[unitstop.Warning]
}

// Options are what a master needs besides its config.
type Options struct {
	// Exe is the binary re-executed for workers ("" = this one).
	Exe string
	// Load re-reads the config for a reload; nil disables reloads.
	Load func() (*config.Config, error)
	// Upgrader hands listeners to a new binary (tableflip); nil serves
	// without upgrades.
	Upgrader Upgrader
	// Host is the machine to place workers on; nil reads this one
	// (LoadHost with NVML). Tests give fake topologies and GPUs.
	Host *plan.Host
	// Unit reads the systemd unit running the master, whose TimeoutStopSec
	// must cover the stop bound; nil is unitstop.Systemd{} (D-Bus).
	Unit unitstop.Source
}

// New returns a master for a resolved config.
func New(cfg *config.Config, log zerolog.Logger, opts Options) *Master {
	if opts.Upgrader == nil {
		opts.Upgrader = noUpgrades{}
	}
	if opts.Unit == nil {
		opts.Unit = unitstop.Systemd{}
	}
	m := &Master{
		opts:    opts,
		log:     log,
		proxy:   lb.New(lb.Options{Timeout: proxyTimeout(cfg), Logger: log}),
		spawner: workers.Spawner{Exe: opts.Exe},
		infer:   &pool{role: worker.RoleInfer},
		prep:    &pool{role: worker.RolePrep},
		stopCh:  make(chan struct{}),

		skipGrace: make(chan struct{}),
	}
	// The front strikes the abandoned requests a crash may have been
	// the doing of (front poison.go); m.front is set before any worker runs.
	crashed := func(e quarantine.Exit) { m.front.WorkerCrashed(e) }
	m.inferCrashes, m.prepCrashes = workers.NewCrashLog(crashed), workers.NewCrashLog(crashed)
	ps := &prepScaler{m: m}
	m.scaler = autoscale.New(ps, ps, log)
	m.repo = repository.New(repositoryMaster{m}, log)
	m.conf.Store(m.repo.Start(cfg))
	m.logs = &loglevel.Levels{Log: m.log, Board: func() *board.Board { return m.board }}
	m.tracing = startTracing(cfg, log) // tracing.go
	m.front = front.New(frontBackend{m}, m.proxy, front.Options{Version: Version, Repository: m.repo, Logging: m.logs, Tracing: m.tracing, Log: log,
		InferExited: m.inferCrashes.ExitOf, PrepExited: m.prepCrashes.ExitOf, ModelIdentity: m.modelIdentity, ServedName: m.servedName})
	m.spawner.Regions = m.front.SharedMemory().ServeWorker // prep workers read regions themselves
	m.generation.Store(generationFromEnv())
	return m
}

// cfg is the config in force (reloads replace it).
func (m *Master) cfg() *config.Config { return m.conf.Load() }

// proxyTimeout bounds a request through the lb: a prep worker's upstream
// call plus its own work.
func proxyTimeout(cfg *config.Config) time.Duration {
	return cfg.Prep.UpstreamTimeout.Duration + 5*time.Second
}

// Stop asks Run to drain and return. Safe to call more than once: a
// second call ends drain_grace early (lameduck.go).
func (m *Master) Stop() {
	if m.stopRequested() {
		m.skipOnce.Do(func() { close(m.skipGrace) })
	}
	m.stopOnce.Do(func() { close(m.stopCh) })
}

// stopRequested reports whether Stop has been called.
func (m *Master) stopRequested() bool { return closed(m.stopCh) }

// Run serves until ctx is cancelled or Stop is called, then drains. It
// returns nil after a clean stop, or the error that prevented startup. When
// it returns, every worker has been reaped and the runtime dir is cleaned.
// After an upgrade it returns once this master has drained and stopped its
// workers, leaving the listeners to the new master.
func (m *Master) Run(ctx context.Context) error {
	m.started = time.Now()
	cfg := m.cfg().WithPrepWorkers(m.cfg().Prep.Count(0)) // autoscaled: its first size
	m.conf.Store(cfg)
	front.ApplyMemoryLimit(cfg)
	if err := m.place(cfg); err != nil {
		return err
	}
	m.checkStopTimeout(cfg)
	m.checkFDLimit(cfg)
	up := m.opts.Upgrader
	rd, err := rundir.Prepare(cfg.RuntimeDir, up.HasParent())
	if err != nil {
		return err
	}
	m.rd = rd
	// Deferred first, so it runs last: `supervisor stop` is answered
	// (ctl.Finish) only once everything below has been undone.
	defer m.release()
	return m.runIn(ctx, cfg)
}

// release cleans the runtime dir, ends upgrades (unless this master handed
// over to a new one) and answers the clients waiting for the stop.
func (m *Master) release() {
	m.rd.Cleanup()
	if m.phase.Load() != phase.HandedOver {
		m.opts.Upgrader.Stop()
	}
	if m.ctl != nil {
		m.ctl.Finish()
	}
}

// runIn is Run once the runtime dir is claimed: every resource it creates
// is released by a defer registered right after it, in reverse order, once
// the actors (actors.go) have all returned.
func (m *Master) runIn(ctx context.Context, cfg *config.Config) error {
	keys, err := admission.LoadKeys(cfg.Auth)
	if err != nil {
		return err
	}
	m.front.SetKeys(keys)
	if m.tls, err = publictls.Load(cfg, m.log); err != nil {
		return err
	}
	defer stopTracing(m.tracing, cfg)
	m.board = board.Open(m.rd.Path(), cfg.Prep.Ceiling()+cfg.Infer.Workers, m.generation.Load(), m.log)
	defer m.board.Remove() // idempotent
	m.spawner.Board = m.board
	m.caches.Log = m.log
	defer m.caches.Remove()
	if err := m.dropWorkerPrivileges(cfg); err != nil {
		return err
	}
	tcp, err := m.opts.Upgrader.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %q: %w (is another instance running?)", cfg.Listen, err)
	}
	defer tcp.Close() // closed by the front's drain first; a second close is harmless
	if m.ctl, err = m.startControl(m.rd.ControlSocket()); err != nil {
		return err
	}
	defer m.ctl.Close() // after the workers stopped: stop and status answer while the master drains
	metrics, metricsLn, err := m.listenMetrics()
	if err != nil {
		return err
	}
	defer metrics.Close() // likewise, and before the control socket
	// Before the close: a scrape between the close and the exit is refused,
	// not queued and reset (internal/listenstop); it answers until then,
	// so the drain can be watched. Not after an upgrade: the socket is the
	// new master's then (mayStopSockets), as the public and gRPC ones are.
	defer func() {
		if m.phase.Load().MayStopSockets(m.opts.Upgrader.HasParent()) {
			m.stopSocket("metrics", metricsLn)
		}
	}()
	if m.grpc, err = m.listenGRPC(); err != nil {
		return err
	}
	defer m.grpc.close() // drained with the front; closed here on every other path
	return m.actors(ctx, m.front.CapConnections(tcp, cfg.Limits.MaxConnections), metrics).Run()
}

// becomeReady tells the parent master (after an upgrade) and systemd that
// this master serves. A stop that began meanwhile wins: the error then
// wraps workers.ErrStopping.
func (m *Master) becomeReady() error {
	if err := m.rd.Own(); err != nil {
		return err
	}
	if err := m.opts.Upgrader.Ready(); err != nil {
		return fmt.Errorf("signal readiness to the previous master: %w", err)
	}
	if _, _, err := m.phase.Move(phase.ToServing); err != nil {
		return fmt.Errorf("%w: %w", workers.ErrStopping, err)
	}
	m.front.SetServing(true)
	lines := []string{daemon.SdNotifyReady, m.statusLine()}
	if m.opts.Upgrader.HasParent() {
		// This master takes over from the one that started it (systemd
		// accepts this with NotifyAccess=all).
		lines = append(lines, fmt.Sprintf("MAINPID=%d", os.Getpid()))
	}
	notify(lines...)
	return nil
}

// onSignal starts what SIGHUP (reload) and SIGUSR2 (upgrade) ask for; the
// outcome is logged and shown by `supervisor status`.
func (m *Master) onSignal(sig os.Signal) {
	switch sig {
	case syscall.SIGHUP:
		m.log.Info().Msg("SIGHUP: reloading the config")
		go m.Reload()
	case syscall.SIGUSR2:
		m.log.Info().Msg("SIGUSR2: upgrading the binary")
		go func() { _ = m.Upgrade() }()
	}
}

// pool is one stage's workers: their positions, the templates the positions were
// given, and the lifecycle they share.
type pool struct {
	role      worker.Role
	mu        sync.RWMutex
	positions []*workers.Position
	specs     []worker.Spec // the template each position was last given
	lc        *workers.Lifecycle
	// closed: shutdown has taken the position list; no position may join the
	// pool any more (a reload that tries gets workers.ErrStopping).
	closed bool
}

// close marks the pool closed and returns its positions: after close, the
// positions returned are all the pool will ever have, so stopping them stops
// every worker of the pool, including those a concurrent reload added.
func (p *pool) close() []*workers.Position {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return append([]*workers.Position(nil), p.positions...)
}

// list returns the pool's positions now.
func (p *pool) list() []*workers.Position {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]*workers.Position(nil), p.positions...)
}

// startWorkers boots the infer pool, then the prep pool, waiting for every
// position's first readiness.
func (m *Master) startWorkers() error {
	cfg := m.cfg()
	for _, p := range []*pool{m.infer, m.prep} {
		p.lc = workers.NewLifecycle(cfg, p.role, nil)
		specs := m.specs(cfg, p.role)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return workers.ErrStopping
		}
		for _, spec := range specs {
			p.positions = append(p.positions, m.newPosition(spec, p.lc))
			p.specs = append(p.specs, spec)
		}
		positions := append([]*workers.Position(nil), p.positions...)
		p.mu.Unlock()
		if err := workers.BootAll(positions); err != nil {
			return err
		}
	}
	return nil
}

// startWorkersUnlessStopped is startWorkers, cut short by a stop (ctx,
// Stop, or quit: the workers actor is interrupted): the pools are closed
// and their positions stopped at once, rather than after every first boot
// (up to boot_timeout each). Whether that happened is phase.Aborting.
func (m *Master) startWorkersUnlessStopped(ctx context.Context, quit <-chan struct{}) error {
	booted := make(chan struct{})
	aborted := make(chan struct{})
	go func() {
		defer close(aborted)
		select {
		case <-ctx.Done():
		case <-m.stopCh:
		case <-quit:
		case <-booted:
			return
		}
		m.moveOrLog(phase.ToDraining)
		workers.StopAll(m.infer.close())
		workers.StopAll(m.prep.close())
	}()
	err := m.startWorkers()
	close(booted)
	<-aborted
	return err
}

func (m *Master) newPosition(spec worker.Spec, lc *workers.Lifecycle) *workers.Position {
	hooks := workers.Hooks{Changed: m.positionChanged, ModelsChanged: m.modelsChanged, Retire: m.retire}
	if spec.Role == worker.RolePrep {
		hooks.Prepare = func(spec *worker.Spec, stop <-chan struct{}) {
			spec.InferSockets = m.prepSockets(spec.Name, spec.BootTimeout, stop)
		}
		hooks.Exited = m.prepCrashes.Record
	} else {
		hooks.Exited = m.inferCrashes.Record
		// A GPU worker's replacement boots drain-first when the GPU has
		// no room for both (NVML; a host without it surges as before).
		hooks.Room = affinity.GPURoom{}
	}
	return workers.NewPosition(spec, lc, m.rd.Path(), m.spawner, hooks, m.log)
}

// specs are the templates of a pool's workers under cfg.
func (m *Master) specs(cfg *config.Config, role worker.Role) []worker.Spec {
	models := modelSpecs(cfg, &m.modelIDs)
	var caches map[string]string
	if role == worker.RolePrep {
		caches = m.caches.Sync(cfg)
	}
	gen := int(m.generation.Load())
	// One worker per assignment of the plan (workerspec.Placed).
	specs := workerspec.Placed(cfg, role, func(name string) worker.Spec {
		s := baseSpec(cfg, role, name, gen)
		// Prep workers learn the models' metadata from infer workers at
		// boot, so a model change replaces them too.
		s.Models = models
		if role == worker.RoleInfer {
			s.ORTLibrary = cfg.ONNXRuntimeLibrary
		} else {
			s.MaxBodyBytes = int64(cfg.MaxBodyBytes)
			s.MaxHeaderBytes = int64(cfg.Limits.MaxHeaderBytes)
			s.UpstreamTimeout = cfg.Prep.UpstreamTimeout.Duration
			s.Processing = workerspec.Processing(cfg, models, caches)
			s.Handoff, s.ArenaSlots, s.ArenaSlotBytes = cfg.Prep.Handoff, cfg.Prep.ArenaSlots, int64(cfg.Prep.ArenaSlotBytes)
			s.MaxDecodeBytes = int64(cfg.Prep.MaxDecodeBytes)
		}
		return s
	})
	if role == worker.RoleInfer {
		workers.MakeEngineCaches(specs, m.spawner.Creds, m.log)
	}
	return specs
}

func baseSpec(cfg *config.Config, role worker.Role, name string, gen int) worker.Spec {
	return worker.Spec{
		Role:              role,
		Name:              name,
		Generation:        gen,
		LogLevel:          cfg.LogLevel,
		DrainTimeout:      cfg.Workers.DrainTimeout.Duration,
		HeartbeatInterval: max(cfg.Workers.HeartbeatTimeout.Duration/4, 25*time.Millisecond),
		Tracing:           tracingConfig(cfg),
	}
}

// modelSpecs lists the models with each file's content identity as its
// version (internal/modelid: the SHA-256 of its bytes, hashed again only
// when the file's inode, size, mtime or ctime changed since ids last
// saw it), so that a reload or a load after a model file was replaced,
// even with its old size and mtime (cp -p), restarts the workers that
// serve it. A file that cannot be read has no version: its workers fail
// to load it and say why.
func modelSpecs(cfg *config.Config, ids *modelid.Cache) []worker.Model {
	var ms []worker.Model
	paths := map[string]bool{}
	for _, mc := range cfg.Models {
		paths[mc.Path] = true
		gpu := cfg.ModelProviders(mc).ORT()
		wm := worker.Model{Name: mc.Name, Path: mc.Path, Batching: workerspec.Batching(mc.Batching), GPU: &gpu, Warmup: mc.Warmup,
			OutputBinding: cfg.ModelOutputBinding(mc), MaxRunTime: cfg.MaxRunTime(mc)}
		wm.Version, _ = ids.Of(mc.Path)
		ms = append(ms, wm)
	}
	ids.Forget(func(path string) bool { return paths[path] })
	return ms
}

// inferSockets lists the sockets of the infer workers serving now.
func (m *Master) inferSockets() []string {
	var socks []string
	for _, s := range m.infer.list() {
		if p := s.Serving(); p != nil && !closed(p.Exited()) {
			socks = append(socks, p.Spec().Socket)
		}
	}
	return socks
}

// prepSockets are the infer sockets a prep worker spawns with. When no
// infer worker serves (they were killed with it, or are booting), it
// waits for one, up to bound (boot_timeout) or until stop: a prep worker
// spawned with no socket could never learn the models, while one that
// waits boots as soon as an infer worker is back. Past bound it returns
// none, and the prep worker fails its boot saying so.
func (m *Master) prepSockets(name string, bound time.Duration, stop <-chan struct{}) []string {
	socks := m.inferSockets()
	if len(socks) > 0 || bound <= 0 {
		return socks
	}
	m.log.Info().Str("worker", name).Dur("boot_timeout", bound).
		Msg("no infer worker serves yet: the prep worker waits for one before it spawns")
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		changed := m.inferChange()
		if socks = m.inferSockets(); len(socks) > 0 {
			return socks
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil
		case <-stop:
			return nil
		case <-m.stopCh:
			return nil
		}
	}
}

// inferChange is closed at the next change of an infer position's
// serving process.
func (m *Master) inferChange() <-chan struct{} {
	m.inferChangedMu.Lock()
	defer m.inferChangedMu.Unlock()
	if m.inferChanged == nil {
		m.inferChanged = make(chan struct{})
	}
	return m.inferChanged
}

// positionChanged propagates a change of serving process: prep workers are the
// lb's backends; infer workers are every prep worker's upstreams.
func (m *Master) positionChanged(s *workers.Position) {
	if s.Role() == worker.RoleInfer {
		m.inferChangedMu.Lock()
		if m.inferChanged != nil {
			close(m.inferChanged)
			m.inferChanged = nil
		}
		m.inferChangedMu.Unlock()
	}
	m.upstreamsMu.Lock()
	defer m.upstreamsMu.Unlock()
	if s.Role() == worker.RolePrep {
		if p := s.Serving(); p != nil {
			// A prep worker that booted during an infer swap may hold a
			// stale list: give it the current one before it takes traffic.
			m.pushUpstreams(p)
		}
	}
	m.propagate(s.Role())
}

// modelsChanged tells every prep worker to read again the models of s's
// infer worker: a reload changed them in place (workers.Hooks.ModelsChanged).
func (m *Master) modelsChanged(s *workers.Position) {
	m.upstreamsMu.Lock()
	defer m.upstreamsMu.Unlock()
	if p := s.Serving(); p != nil {
		m.propagate(s.Role(), p.Spec().Socket)
	}
}

// propagate hands the workers that serve now to their clients: prep
// workers to the lb, infer workers to every prep worker (refetch: those
// whose models changed in place). The caller holds upstreamsMu.
func (m *Master) propagate(role worker.Role, refetch ...string) {
	if role == worker.RolePrep {
		m.updateBackends()
		return
	}
	for _, ps := range m.prep.list() {
		if p := ps.Serving(); p != nil {
			m.pushUpstreams(p, refetch...)
		}
	}
}

func backendName(p *workers.Process) string { return fmt.Sprintf("%s#%d", p.Spec().Name, p.PID()) }

// updateBackends hands the lb the prep workers that serve now.
func (m *Master) updateBackends() {
	var bs []lb.Backend
	for _, s := range m.prep.list() {
		if p := s.Serving(); p != nil {
			bs = append(bs, lb.Backend{Name: backendName(p), Socket: p.Spec().Socket})
		}
	}
	m.proxy.SetBackends(bs)
}

// pushUpstreams tells a prep worker which infer workers to use.
// refetch names infer workers whose models changed in place, to be read
// again.
func (m *Master) pushUpstreams(p *workers.Process, refetch ...string) {
	if err := worker.SetUpstreams(p.Spec().Socket, m.inferSockets(), 5*time.Second, refetch...); err != nil {
		m.log.Warn().Err(err).Str("worker", p.Spec().Name).Int("pid", p.PID()).Msg("could not update the prep worker's infer workers")
	}
}

// retire drains a replaced process and stops it. The lb (for prep) or
// every prep worker (for infer) no longer sends it anything new; a prep
// worker is stopped once the lb has nothing in flight on it, an infer
// worker drains its own in-flight requests on SIGTERM.
func (m *Master) retire(_ *workers.Position, p *workers.Process, drain time.Duration) {
	if p.Spec().Role == worker.RolePrep {
		m.drainPrep(p, drain)
	}
	p.Stop(drain)
	m.log.Info().Str("worker", p.Spec().Name).Int("pid", p.PID()).Str("exit", p.Exit()).Msg("retired worker stopped")
}

// drainPrep waits until the lb has no request in flight on a prep
// worker it no longer routes to, bounded by drain, or until it exits.
func (m *Master) drainPrep(p *workers.Process, drain time.Duration) {
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-m.proxy.Idle(backendName(p)):
	case <-t.C:
		m.log.Warn().Str("worker", p.Spec().Name).Int("pid", p.PID()).Msg("drain_timeout reached with requests in flight")
	case <-p.Exited():
	}
}

// drainAll is drainPrep for the serving worker of each position, in
// parallel: the retire order's wait for positions a pool no longer has.
func (m *Master) drainAll(positions []*workers.Position, drain time.Duration) {
	var wg sync.WaitGroup
	for _, s := range positions {
		if p := s.Serving(); p != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.drainPrep(p, drain)
			}()
		}
	}
	wg.Wait()
}

// stopWorkers closes both pools and stops every position in them, prep first.
// A reload running meanwhile cannot add a position once its pool is closed,
// and its boots and replacements end as their positions stop; stopWorkers
// then waits for the reload (or upgrade) to return (opsMu), so that the
// positions a reload was removing are reaped too before the master exits.
func (m *Master) stopWorkers() {
	workers.StopAll(m.prep.close())
	workers.StopAll(m.infer.close())
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	// Nothing can have joined a closed pool; stopping again is a no-op
	// for every position already stopped and cheap to make sure of.
	workers.StopAll(m.prep.list())
	workers.StopAll(m.infer.list())
}

func (m *Master) status() control.Status {
	ph := m.phase.Load()
	st := control.Status{PID: os.Getpid(), Version: Version, Ready: ph.Ready(), Listen: m.cfg().Listen,
		Started: m.started, Generation: m.generation.Load()}
	switch {
	case ph.LameDuck():
		// Still serving, but no longer ready (lameDuck).
		st.Ready, st.Stopping = false, control.StoppingGrace
	case ph.Stopping():
		st.Ready, st.Stopping = false, control.StoppingDrain
	}
	st.LastReload, st.LastUpgrade = m.history.last()
	st.Warnings = m.warnings()
	st.ScoreboardFaults, st.ScoreboardError = m.board.Fault()
	st.Models = m.modelStates()
	st.Autoscale = m.autoscaleStatus()
	st.RepositoryAPI = m.repo.Describe()
	ps := m.front.PoisonStats()
	st.Quarantined = ps.Refusing()
	if len(ps.RunTimeouts) > 0 {
		st.RunTimeouts = ps.RunTimeouts
	}
	st.PoisonFallbackKeys = m.front.BodyCounts().PoisonFallbackKeys
	for _, s := range append(m.infer.list(), m.prep.list()...) {
		ws := s.Status()
		st.Workers = append(st.Workers, ws)
		if ws.State == control.StateDegraded {
			st.Degraded = append(st.Degraded, ws.Name)
		}
	}
	return st
}

// moveOrLog is move for the steps that the table allows from every phase
// they can happen in: a refusal is a bug of the master's, logged, and
// the phase stays.
func (m *Master) moveOrLog(step func(phase.Phase) phase.Phase) (from, now phase.Phase) {
	from, now, err := m.phase.Move(step)
	if err != nil {
		m.log.Error().Err(err).Msg("refused an illegal phase change")
	}
	return from, now
}
