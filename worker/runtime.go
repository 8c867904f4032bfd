package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/drain"
	"github.com/supervisor-dev/supervisor/shm"
)

// The file descriptors a worker inherits from the master (see the package doc).
const (
	eventsFD   = 3
	livenessFD = 4
)

// Runtime is a worker process's connection to its master.
type Runtime struct {
	Spec *Spec
	Log  zerolog.Logger

	events     *os.File
	eventsMu   sync.Mutex
	masterGone chan struct{}
	serving    atomic.Bool
	requests   atomic.Int64
	slot       *shm.Slot       // nil without a scoreboard
	board      *shm.Scoreboard // the slot's board, for its log level; nil without one
	pid        int
}

// Start wires the worker to its master: it takes the inherited pipes and
// starts watching the liveness pipe. Call it before loading anything slow,
// so a master that dies during a long model load still takes the worker down.
func Start(spec *Spec) *Runtime {
	r := &Runtime{
		Spec:       spec,
		Log:        NewLogger(spec),
		events:     os.NewFile(eventsFD, "event-pipe"),
		masterGone: make(chan struct{}),
		pid:        os.Getpid(),
	}
	r.openSlot()
	// Terminal Ctrl-C reaches the whole process group; the master decides
	// when workers stop, so workers ignore SIGINT.
	signal.Ignore(syscall.SIGINT)
	go r.watchMaster(os.NewFile(livenessFD, "liveness-pipe"))
	r.applyPlacement() // placement.go
	return r
}

// NewLogger returns the JSON logger every line of a worker goes through,
// tagged with the worker's identity. The level is zerolog's global one,
// the spec's at first: the one knob that reaches every copy of the logger,
// so that the master's run-time level (the scoreboard's, followLogLevel)
// can change it.
func NewLogger(spec *Spec) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(spec.LogLevel)
	if err != nil || spec.LogLevel == "" {
		lvl = zerolog.InfoLevel
	}
	zerolog.SetGlobalLevel(lvl)
	return zerolog.New(os.Stderr).With().Timestamp().
		Str("role", string(spec.Role)).Str("worker", spec.Name).
		Int("pid", os.Getpid()).Int("generation", spec.Generation).Logger()
}

func (r *Runtime) watchMaster(f *os.File) {
	defer close(r.masterGone)
	if f == nil {
		return
	}
	// The master never writes: any return (EOF or error) means it is gone.
	_, _ = io.Copy(io.Discard, f)
	if !r.serving.Load() {
		// Still booting (a model load can take minutes): nothing to drain.
		r.Log.Warn().Msg("master is gone before this worker was ready: exiting")
		os.Exit(1)
	}
}

// Fail reports a boot failure to the master and exits with status 1.
func (r *Runtime) Fail(err error) {
	r.Log.Error().Err(err).Msg("worker failed to start")
	r.event("error: " + strings.ReplaceAll(err.Error(), "\n", "; "))
	os.Exit(1)
}

// event writes one line to the master. A failed write means the master is
// gone, which the liveness pipe reports on its own.
func (r *Runtime) event(line string) {
	if r.events == nil {
		return
	}
	r.eventsMu.Lock()
	defer r.eventsMu.Unlock()
	_, _ = r.events.WriteString(line + "\n")
}

func (r *Runtime) heartbeat(stop <-chan struct{}) {
	if r.Spec.HeartbeatInterval <= 0 {
		return
	}
	t := time.NewTicker(r.Spec.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			r.event("hb")
			r.beat(now)
		case <-stop:
			return
		}
	}
}

// Count wraps a handler so that every request counts towards MaxRequests;
// reaching it asks the master, once, for a replacement. The worker keeps
// serving until the master has one ready and drains this one.
//
// Count also accounts inference requests in the worker's scoreboard slot.
func (r *Runtime) Count(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	h = r.track(h)
	limit := int64(r.Spec.MaxRequests)
	if limit <= 0 {
		return h
	}
	return func(ctx *fasthttp.RequestCtx) {
		h(ctx)
		if r.requests.Add(1) == limit {
			r.event(fmt.Sprintf("recycle: served %d requests (max_requests)", limit))
		}
	}
}

// Serve listens on the spec's socket, tells the master it is ready and
// serves until SIGTERM or the master's death, then drains in-flight requests
// (bounded by DrainTimeout) and returns.
func (r *Runtime) Serve(srv *fasthttp.Server) error {
	ln, err := r.listener()
	if err != nil {
		return err
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	r.serving.Store(true)
	if r.slot != nil {
		now := time.Now()
		r.slot.SetReadyTime(now)
		r.slot.Heartbeat(now)
		r.slot.SetState(shm.Ready)
	}
	r.event("ok")
	stopBeat := make(chan struct{})
	defer close(stopBeat)
	go r.heartbeat(stopBeat)
	r.Log.Info().Str("socket", r.Spec.Socket).Msg("worker ready")

	select {
	case err := <-served:
		return fmt.Errorf("serve %q: %w", r.Spec.Socket, err)
	case <-term:
		r.Log.Info().Msg("SIGTERM: draining")
	case <-r.masterGone:
		r.Log.Warn().Msg("master is gone: draining and exiting")
	}
	r.setState(shm.Draining)
	defer r.setState(shm.Stopping)
	return r.drain(srv)
}

func (r *Runtime) drain(srv *fasthttp.Server) error {
	timeout := r.Spec.DrainTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The master has taken this worker out of its clients' pools, so they
	// close their connections soon.
	drain.WaitForClientsToLeave(srv, min(timeout, drain.ClientGrace), nil)
	err := srv.ShutdownWithContext(ctx)
	if r.Spec.ListenFD == 0 {
		_ = os.Remove(r.Spec.Socket) // a socket the master made, it removes
	}
	if errors.Is(err, context.DeadlineExceeded) {
		r.Log.Warn().Dur("drain_timeout", timeout).Msg("drain timed out; in-flight requests were cut")
		return nil
	}
	r.Log.Info().Msg("drained")
	return err
}

// listener is the socket the master made for this worker, or a new one.
func (r *Runtime) listener() (net.Listener, error) {
	if r.Spec.ListenFD == 0 {
		return ListenUnix(r.Spec.Socket)
	}
	f := os.NewFile(uintptr(r.Spec.ListenFD), r.Spec.Socket)
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("the socket the master made for %q (fd %d): %w", r.Spec.Socket, r.Spec.ListenFD, err)
	}
	return ln, nil
}

// ListenUnix listens on a Unix socket at path, replacing a stale socket file
// left by a dead process. The socket is private to the owner (0600).
func ListenUnix(path string) (net.Listener, error) {
	if len(path) >= 108 {
		return nil, fmt.Errorf("socket path %q is %d bytes; Unix socket paths are limited to 107: use a shorter runtime_dir", path, len(path))
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %q: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %q: %w", path, err)
	}
	return ln, nil
}
