package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/worker"
)

// Master is a running supervisor instance.
type Master struct {
	cfg     *Config
	log     zerolog.Logger
	proxy   *lb.Proxy
	spawner spawner

	infer, prep []*slot
	// ready is what /v2/health/ready reports: every pool has a ready worker
	// and the master is not stopping. serving gates inference routes: it
	// stays true while the public listener drains, so requests still
	// arriving on open keep-alive connections are served, not refused.
	ready   atomic.Bool
	serving atomic.Bool
	started time.Time

	// upstreamsMu serialises slot changes, so that pushes of the infer
	// worker list to prep workers cannot overtake each other.
	upstreamsMu sync.Mutex

	stopOnce sync.Once
	stopCh   chan struct{}
}

// New returns a master for a resolved config. exe is the binary to
// re-execute for workers ("" = this one).
func New(cfg *Config, log zerolog.Logger, exe string) *Master {
	return &Master{
		cfg:     cfg,
		log:     log,
		proxy:   lb.New(lb.Options{Timeout: cfg.Prep.UpstreamTimeout.Duration + 5*time.Second, Logger: log}),
		spawner: spawner{exe: exe},
		stopCh:  make(chan struct{}),
	}
}

// Stop asks Run to drain and return. Safe to call more than once.
func (m *Master) Stop() { m.stopOnce.Do(func() { close(m.stopCh) }) }

// Run serves until ctx is cancelled or Stop is called, then drains. It
// returns nil after a clean stop, or the error that prevented startup. When
// it returns, every worker has been reaped and the runtime dir is cleaned.
func (m *Master) Run(ctx context.Context) error {
	m.started = time.Now()
	rd, err := prepareRuntimeDir(m.cfg.RuntimeDir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", m.cfg.Listen)
	if err != nil {
		rd.cleanup()
		return fmt.Errorf("listen on %q: %w (is another instance running?)", m.cfg.Listen, err)
	}
	front := m.newFrontServer()
	served := make(chan error, 1)
	go func() { served <- front.Serve(ln) }()
	ctl, err := m.startControl(rd.controlSocket())
	if err != nil {
		_ = front.Shutdown()
		rd.cleanup()
		return err
	}

	err = m.startWorkers(rd)
	if err == nil {
		err = m.serve(ctx, served)
	}
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	m.shutdown(front)
	ctl.close()
	rd.cleanup()
	// Answer `supervisor stop` last: when it returns, everything is gone.
	ctl.finish()
	return err
}

// serve marks the master ready and blocks until it is told to stop.
func (m *Master) serve(ctx context.Context, served <-chan error) error {
	m.serving.Store(true)
	m.ready.Store(true)
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)
	m.log.Info().Str("listen", m.cfg.Listen).Int("prep", len(m.prep)).Int("infer", len(m.infer)).
		Dur("startup", time.Since(m.started)).Msg("serving")
	select {
	case <-ctx.Done():
		return nil
	case <-m.stopCh:
		return nil
	case err := <-served:
		return fmt.Errorf("public listener failed: %w", err)
	}
}

// startWorkers boots the infer pool, then the prep pool, waiting for every
// slot's first readiness.
func (m *Master) startWorkers(rd *runtimeDir) error {
	infer := m.newLifecycle(m.cfg.Infer.Recycle)
	for i := range m.cfg.Infer.Workers {
		m.infer = append(m.infer, m.newSlot(m.inferSpec(i), rd, infer))
	}
	if err := bootAll(m.infer); err != nil {
		return err
	}
	prep := m.newLifecycle(m.cfg.Prep.Recycle)
	for i := range m.cfg.Prep.Workers {
		m.prep = append(m.prep, m.newSlot(m.prepSpec(i), rd, prep))
	}
	return bootAll(m.prep)
}

func (m *Master) newLifecycle(r Recycle) *lifecycle {
	w := m.cfg.Workers
	return &lifecycle{
		bootTimeout:      m.cfg.BootTimeout.Duration,
		stopDrain:        m.cfg.ShutdownTimeout.Duration,
		recycleDrain:     w.DrainTimeout.Duration,
		heartbeatTimeout: w.HeartbeatTimeout.Duration,
		backoffBase:      w.RestartBackoff.Duration,
		backoffMax:       w.RestartBackoffMax.Duration,
		degradedAfter:    w.DegradedAfter,
		recycle:          r,
		surge:            make(chan struct{}, w.MaxSurge),
	}
}

func (m *Master) newSlot(spec worker.Spec, rd *runtimeDir, lc *lifecycle) *slot {
	s := &slot{tmpl: spec, dir: rd.path, spawner: m.spawner, lc: lc, log: m.log, state: stateStarting,
		hooks: slotHooks{changed: m.slotChanged, retire: m.retire}}
	if spec.Role == worker.RolePrep {
		s.hooks.prepare = func(spec *worker.Spec) { spec.InferSockets = m.inferSockets() }
	}
	return s
}

func (m *Master) baseSpec(role worker.Role, name string) worker.Spec {
	return worker.Spec{
		Role:              role,
		Name:              name,
		LogLevel:          m.cfg.LogLevel,
		DrainTimeout:      m.cfg.Workers.DrainTimeout.Duration,
		HeartbeatInterval: max(m.cfg.Workers.HeartbeatTimeout.Duration/4, 25*time.Millisecond),
	}
}

func (m *Master) inferSpec(i int) worker.Spec {
	s := m.baseSpec(worker.RoleInfer, fmt.Sprintf("infer-%d", i))
	for _, mc := range m.cfg.Models {
		s.Models = append(s.Models, worker.Model{Name: mc.Name, Path: mc.Path})
	}
	s.ORTLibrary = m.cfg.ONNXRuntimeLibrary
	s.IntraOpThreads = m.cfg.Infer.IntraOpThreads
	return s
}

func (m *Master) prepSpec(i int) worker.Spec {
	s := m.baseSpec(worker.RolePrep, fmt.Sprintf("prep-%d", i))
	s.MaxBodyBytes = int64(m.cfg.MaxBodyBytes)
	s.UpstreamTimeout = m.cfg.Prep.UpstreamTimeout.Duration
	s.Processing = m.cfg.processing()
	return s
}

// inferSockets lists the sockets of the infer workers serving now.
func (m *Master) inferSockets() []string {
	var socks []string
	for _, s := range m.infer {
		if p := s.serving(); p != nil {
			socks = append(socks, p.spec.Socket)
		}
	}
	return socks
}

// slotChanged propagates a change of serving process: prep workers are the
// lb's backends; infer workers are every prep worker's upstreams.
func (m *Master) slotChanged(s *slot) {
	m.upstreamsMu.Lock()
	defer m.upstreamsMu.Unlock()
	switch s.tmpl.Role {
	case worker.RolePrep:
		if p := s.serving(); p != nil {
			// A prep worker that booted during an infer swap may hold a
			// stale list: give it the current one before it takes traffic.
			m.pushUpstreams(p)
		}
		m.updateBackends()
	case worker.RoleInfer:
		for _, ps := range m.prep {
			if p := ps.serving(); p != nil {
				m.pushUpstreams(p)
			}
		}
	}
}

func backendName(p *process) string { return fmt.Sprintf("%s#%d", p.spec.Name, p.pid()) }

// updateBackends hands the lb the prep workers that serve now.
func (m *Master) updateBackends() {
	var bs []lb.Backend
	for _, s := range m.prep {
		if p := s.serving(); p != nil {
			bs = append(bs, lb.Backend{Name: backendName(p), Socket: p.spec.Socket})
		}
	}
	m.proxy.SetBackends(bs)
}

// pushUpstreams tells a prep worker which infer workers to use.
func (m *Master) pushUpstreams(p *process) {
	if err := worker.SetUpstreams(p.spec.Socket, m.inferSockets(), 5*time.Second); err != nil {
		m.log.Warn().Err(err).Str("worker", p.spec.Name).Int("pid", p.pid()).Msg("could not update the prep worker's infer workers")
	}
}

// retire drains a replaced process and stops it. The lb (for prep) or
// every prep worker (for infer) no longer sends it anything new; a prep
// worker is stopped once the lb has nothing in flight on it, an infer
// worker drains its own in-flight requests on SIGTERM.
func (m *Master) retire(s *slot, p *process) {
	drain := s.lc.recycleDrain
	if p.spec.Role == worker.RolePrep {
		select {
		case <-m.proxy.Idle(backendName(p)):
		case <-time.After(drain):
			m.log.Warn().Str("worker", p.spec.Name).Int("pid", p.pid()).Msg("drain_timeout reached with requests in flight")
		case <-p.exited:
		}
	}
	p.stop(drain)
	m.log.Info().Str("worker", p.spec.Name).Int("pid", p.pid()).Str("exit", describeExit(p.err)).Msg("retired worker stopped")
}

// shutdown drains the public listener, then stops prep and infer workers.
func (m *Master) shutdown(front *fasthttp.Server) {
	m.ready.Store(false)
	m.log.Info().Dur("shutdown_timeout", m.cfg.ShutdownTimeout.Duration).Msg("stopping: draining in-flight requests")
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.ShutdownTimeout.Duration)
	defer cancel()
	if err := front.ShutdownWithContext(ctx); errors.Is(err, context.DeadlineExceeded) {
		m.log.Warn().Msg("shutdown_timeout reached with requests still in flight")
	}
	m.serving.Store(false)
	// Release the lb's connections to prep workers so their drains need
	// not wait for them.
	m.proxy.SetBackends(nil)
	m.log.Info().Msg("public listener drained; stopping workers")
	stopAll(m.prep)
	stopAll(m.infer)
	m.log.Info().Msg("stopped")
}

// bootAll starts every slot and waits for each one's first boot; it
// returns the boot errors joined (the slots that did boot keep running
// until stopAll).
func bootAll(slots []*slot) error {
	booted := make(chan error, len(slots))
	for _, s := range slots {
		s.start(booted)
	}
	var errs []error
	for range slots {
		if err := <-booted; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopAll stops slots in parallel and waits until their processes are reaped.
func stopAll(slots []*slot) {
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stopAndWait()
		}()
	}
	wg.Wait()
}

// Status is the master's answer to `supervisor status`.
type Status struct {
	PID     int            `json:"pid"`
	Ready   bool           `json:"ready"`
	Listen  string         `json:"listen"`
	Started time.Time      `json:"started"`
	Workers []WorkerStatus `json:"workers"`
}

func (m *Master) status() Status {
	st := Status{PID: os.Getpid(), Ready: m.ready.Load(), Listen: m.cfg.Listen, Started: m.started}
	for _, s := range append(append([]*slot(nil), m.infer...), m.prep...) {
		st.Workers = append(st.Workers, s.status())
	}
	return st
}
