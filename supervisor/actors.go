package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/oklog/run"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/drain"
	"github.com/supervisor-dev/supervisor/supervisor/front"
	"github.com/supervisor-dev/supervisor/supervisor/metrics"
	"github.com/supervisor-dev/supervisor/supervisor/phase"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
)

// milestones are the points of startup the actors wait on. Without a
// parent (no upgrade) the front, the metrics listener and the control
// socket serve from the start (health checks get 503 while workers boot);
// a master started by an upgrade serves its front and metrics once its
// workers are up (booted), and its control socket once it is ready: until
// then the previous master serves them.
type milestones struct {
	booted chan struct{} // closed when the workers booted (upgrade: front and metrics may serve)
	ready  chan struct{} // closed when becomeReady succeeded (upgrade: control may answer)
	front  <-chan struct{}
	ctl    <-chan struct{}
}

func newMilestones(hasParent bool) milestones {
	ms := milestones{booted: make(chan struct{}), ready: make(chan struct{})}
	ms.front, ms.ctl = ms.booted, ms.ready
	if !hasParent {
		open := make(chan struct{})
		close(open)
		ms.front, ms.ctl = open, open
	}
	return ms
}

// actors is the master's run group. Interrupts run one after another in
// the order added, which is the stop order: stop reacting to signals,
// drain the public listener, stop the workers (prep, then infer), then
// let the metrics and control actors return; the listeners themselves
// are closed by runIn's defers once every actor has returned.
func (m *Master) actors(ctx context.Context, ln front.Listener, metrics *metrics.Server) *run.Group {
	ms := newMilestones(m.opts.Upgrader.HasParent())
	var g run.Group
	m.addSignals(&g, ctx, ms)
	// The autoscaler stops resizing first; a resize in flight is cut
	// short by the workers' stop like a reload's boots.
	g.Add(func() error { m.scaler.Run(); return nil }, func(error) { m.scaler.Stop() })
	m.addFront(&g, ln, ms)
	m.addWorkers(&g, ctx, ms)
	if metrics != nil {
		addServer(&g, ms.front, metrics.Serve)
	}
	addServer(&g, ms.front, m.grpc.serve) // nil-safe: grpc.listen ""
	addServer(&g, ms.ctl, m.ctl.Start)
	return &g
}

// addSignals adds the actor that ends the group on a stop (ctx, Stop) and,
// once the master is ready, starts reloads (SIGHUP) and upgrades (SIGUSR2)
// and feeds systemd's watchdog. Signals that arrive during startup wait
// in the channel until then.
func (m *Master) addSignals(g *run.Group, ctx context.Context, ms milestones) {
	quit := make(chan struct{})
	g.Add(func() error {
		signals := make(chan os.Signal, 4)
		signal.Notify(signals, syscall.SIGHUP, syscall.SIGUSR2)
		defer signal.Stop(signals)
		stopped := m.stopAsked(ctx, quit)
		select {
		case <-ms.ready:
		case <-stopped:
			return nil
		}
		watchdog, stop := m.watchdog()
		defer stop()
		for {
			select {
			case <-stopped:
				m.lameDuck(quit, watchdog)
				return nil
			case sig := <-signals:
				m.onSignal(sig)
			case <-watchdog:
				notify(daemon.SdNotifyWatchdog)
			}
		}
	}, func(error) { close(quit) })
}

// stopAsked is closed once ctx is done, Stop is called or quit is
// closed; the goroutine that closes it ends then too (the group closes
// quit on every actor when it ends, so it never outlives Run).
func (m *Master) stopAsked(ctx context.Context, quit <-chan struct{}) <-chan struct{} {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-m.stopCh:
		case <-quit:
		}
	}()
	return stopped
}

// watchdog ticks at half systemd's watchdog interval (nil without one);
// stop releases the ticker.
func (m *Master) watchdog() (<-chan time.Time, func()) {
	if m.opts.Upgrader.HasParent() && os.Getenv("WATCHDOG_PID") != "" {
		// systemd addressed the watchdog to the master this one replaced;
		// MAINPID= made this one the service's main process.
		os.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	}
	d, _ := daemon.SdWatchdogEnabled(false)
	if d <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(d / 2)
	return t.C, t.Stop
}

// addFront adds the public listener: it serves once ms.front allows and
// its interrupt drains it (drainFront). A listener that fails on its own
// ends the group with that error.
func (m *Master) addFront(g *run.Group, ln front.Listener, ms milestones) {
	front := m.front.Server()
	quit := make(chan struct{})
	g.Add(func() error {
		select {
		case <-ms.front:
		case <-quit:
			return nil
		}
		err := front.Serve(m.tls.HTTP(ln))
		if m.phase.Load().Stopping() {
			return nil
		}
		return fmt.Errorf("public listener failed: %w", err)
	}, func(error) {
		close(quit)
		m.drainFront(front, ln)
	})
}

// addWorkers adds the workers actor: it boots both pools, makes the
// master ready and then holds until interrupted; its interrupt stops every
// worker (stopWorkers), after the front has drained.
func (m *Master) addWorkers(g *run.Group, ctx context.Context, ms milestones) {
	quit := make(chan struct{})
	g.Add(func() error {
		err := m.startWorkersUnlessStopped(ctx, quit)
		if m.phase.Load() == phase.Aborting {
			// Told to stop while booting: a clean stop, not a failed start.
			m.log.Info().Msg("stopped during startup")
			return nil
		}
		if err != nil {
			return err
		}
		if m.opts.Upgrader.HasParent() {
			// The previous master serves the shared listener until this one
			// is ready: accepting earlier would answer its clients 503. Its
			// workers are up, so it serves from its first accepted request:
			// both masters accept from the one listener until the previous
			// one drains, and a request decided here before becomeReady
			// would otherwise get 503 "not ready".
			m.front.SetServing(true)
		}
		close(ms.booted)
		if err := m.becomeReady(); errors.Is(err, workers.ErrStopping) {
			m.log.Info().Msg("stopped during startup")
			return nil
		} else if err != nil {
			return err
		}
		close(ms.ready)
		m.logServing()
		<-quit
		return nil
	}, func(error) {
		close(quit)
		m.log.Info().Msg("public listener drained; stopping workers")
		m.stopWorkers()
		m.moveOrLog(phase.ToStopped)
		m.log.Info().Msg("stopped")
	})
}

// addServer adds a listener that starts serving (start, which returns at
// once) when may is closed and holds until interrupted; its listener is
// closed by runIn's defers, after the workers have stopped, so it answers
// while the master drains.
func addServer(g *run.Group, may <-chan struct{}, start func()) {
	quit := make(chan struct{})
	g.Add(func() error {
		select {
		case <-may:
			start()
		case <-quit:
			return nil
		}
		<-quit
		return nil
	}, func(error) { close(quit) })
}

// logServing logs that the master serves, and how long it took.
func (m *Master) logServing() {
	cfg := m.cfg()
	m.log.Info().Str("listen", cfg.Listen).Int("prep", len(m.prep.list())).Int("infer", len(m.infer.list())).
		Int64("generation", m.generation.Load()).Dur("startup", time.Since(m.started)).Msg("serving")
}

// drainFront stops accepting (on a stop that hands over to no one, the
// public and gRPC sockets stop listening: internal/listenstop) and lets connected clients
// finish (their responses ask them to close); the workers actor stops the
// workers next.
// After an upgrade the new master accepts on the same socket meanwhile,
// so a client that reconnects reaches it.
func (m *Master) drainFront(srv *fasthttp.Server, ln front.Listener) {
	_, ph := m.moveOrLog(phase.ToDraining)
	if ph != phase.HandedOver {
		notify(daemon.SdNotifyStopping, "STATUS=draining and stopping")
	}
	timeout := m.cfg().ShutdownTimeout.Duration
	m.log.Info().Dur("shutdown_timeout", timeout).Bool("upgraded", ph == phase.HandedOver).Msg("stopping: draining in-flight requests")
	// ph is read as the move made it: an upgrade that begins afterwards is
	// refused, one that began before keeps the sockets (upgradingDraining).
	if ph.MayStopSockets(m.opts.Upgrader.HasParent()) {
		// Before clients are told to reconnect: they are refused, not
		// queued on a socket no one will accept from (internal/listenstop).
		m.stopSocket("public", ln)
		m.stopSocket("gRPC", m.grpc.listener())
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m.front.Drain()
	grpcDrained := make(chan struct{}) // the gRPC listener drains alongside
	go func() { defer close(grpcDrained); m.grpc.drain(ctx) }()
	_ = ln.Close()
	// Handed over, the clients that reconnect reach the new master: the
	// connections quiet for drain.QuietFor are closed at once rather than
	// hold this master (and the upgrade waiting for its exit) for the
	// whole grace. A stop keeps the grace: no one takes its clients over.
	var quiet func() bool
	if ph == phase.HandedOver {
		quiet = func() bool { return m.front.QuietFor(drain.QuietFor) }
	}
	drain.WaitForClientsToLeave(srv, min(timeout, drain.ClientGrace), quiet)
	if err := srv.ShutdownWithContext(ctx); errors.Is(err, context.DeadlineExceeded) {
		m.log.Warn().Msg("shutdown_timeout reached with requests still in flight")
	}
	<-grpcDrained
	m.front.SetServing(false)
	// Release the lb's connections to prep workers so their drains need
	// not wait for them.
	m.proxy.SetBackends(nil)
}
