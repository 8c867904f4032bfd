package metrics

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/board"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/front"
	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// Master is what the metrics listener reads of the master, at request
// time.
type Master interface {
	// Config is metrics' section of the config in force (a reload's
	// allowed_hosts apply to the next request).
	Config() config.MetricsConfig
	// Status is the master's state, as `supervisor status` gets it.
	Status() control.Status
	// Scrape is everything /metrics renders, with gpus the GPUs' usage.
	Scrape(gpus []affinity.GPUUsage) status.Scrape
}

// Server serves the metrics listener: /metrics (Prometheus text),
// /status (a self-refreshing HTML page) and /status.json (the Report).
// Everything is read from the scoreboard and the master's state at request
// time; nothing on the request path of inference waits for it. A nil
// *Server (no metrics.listen) serves nothing.
type Server struct {
	m     Master
	board *board.Board
	log   zerolog.Logger
	ln    net.Listener
	srv   *fasthttp.Server
	cpu   *status.CPUSampler
	hist  *status.RateHistory

	gpuMu   sync.Mutex
	gpuAt   time.Time
	gpus    []affinity.GPUUsage
	stop    chan struct{}
	stopped sync.WaitGroup
}

// gpuCacheFor bounds how often a scrape initialises NVML.
const gpuCacheFor = 2 * time.Second

// New returns the server for ln, reading m and b (the master's
// scoreboard; nil = none); Serve starts it.
func New(ln net.Listener, m Master, b *board.Board, log zerolog.Logger) *Server {
	ms := &Server{m: m, board: b, log: log, ln: capConns(ln), cpu: status.NewCPUSampler(), hist: status.NewRateHistory(), stop: make(chan struct{})}
	ms.srv = &fasthttp.Server{Handler: ms.handle, Name: "supervisor-metrics", ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute, Logger: front.Logger(log)}
	return ms
}

// Serve starts serving and sampling the request rate for the chart.
func (ms *Server) Serve() {
	if ms == nil {
		return
	}
	ms.stopped.Add(2)
	go func() {
		defer ms.stopped.Done()
		// nil after Close (fasthttp ends quietly on net.ErrClosed); an
		// error is an accept that failed for good, such as a socket shut
		// down under this master: the port answers nothing from now on.
		if err := ms.srv.Serve(ms.ln); err != nil {
			ms.log.Error().Err(err).Str("listen", ms.ln.Addr().String()).
				Msg("metrics listener failed; scrapes get no answer until a restart (or an upgrade)")
		}
	}()
	go func() {
		defer ms.stopped.Done()
		ms.sampleRates()
	}()
}

// closeGrace bounds how long Close waits for the metrics listener's
// connections: a scrape in flight finishes within it, and a client that
// connected and went silent no longer holds the master's exit until its
// ReadTimeout (10s).
const closeGrace = time.Second

// Close stops the listener (this master's copy, after an upgrade) and the
// sampler. It waits closeGrace at most for connections: a connection left
// open then ends at its ReadTimeout, without holding the master's exit.
func (ms *Server) Close() {
	if ms == nil {
		return
	}
	close(ms.stop)
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	_ = ms.srv.ShutdownWithContext(ctx)
	_ = ms.ln.Close()
	ms.stopped.Wait()
}

func (ms *Server) handle(ctx *fasthttp.RequestCtx) {
	defer func() {
		if r := recover(); r != nil { // a metrics bug must never take the master down
			ms.log.Error().Any("panic", r).Str("path", string(ctx.Path())).Msg("metrics handler panicked")
			ctx.Error("internal error", fasthttp.StatusInternalServerError)
		}
	}()
	// Built per request (scrapes are rare), so a reload's allowed_hosts
	// apply at once.
	if !newMetricsHosts(ms.m.Config()).allows(ctx.Host()) {
		refuseHost(ctx)
		return
	}
	switch string(ctx.Path()) {
	case "/metrics":
		ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
		ctx.SetBody(status.MetricsText(ms.m.Scrape(ms.gpuUsage())))
	case "/status":
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.SetBody(status.Page(ms.report(), ms.hist.Points()))
	case "/status.json":
		b, err := json.MarshalIndent(ms.report(), "", "  ")
		if err != nil {
			ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(b)
	case "/":
		ctx.Redirect("/status", fasthttp.StatusFound)
	default:
		ctx.Error("no route for "+string(ctx.Path())+" (try /metrics or /status)", fasthttp.StatusNotFound)
	}
}

// report is the master's Report of itself.
func (ms *Server) report() *status.Report {
	h, slots, _ := ms.board.Snapshot()
	r := status.OfMaster(ms.m.Status(), h, slots, ms.gpuUsage(), ms.cpu)
	r.Source, r.Scoreboard = "master", ms.board.Path()
	return r
}

func (ms *Server) gpuUsage() []affinity.GPUUsage {
	ms.gpuMu.Lock()
	defer ms.gpuMu.Unlock()
	if time.Since(ms.gpuAt) > gpuCacheFor {
		ms.gpus, _ = affinity.NVML{}.Usage()
		ms.gpuAt = time.Now()
	}
	return ms.gpus
}

// sampleRates records the prep pool's request count and latency histogram
// every chartStep, for the status page's chart.
func (ms *Server) sampleRates() {
	t := time.NewTicker(status.ChartStep)
	defer t.Stop()
	ms.hist.Add(ms.point(time.Now()))
	for {
		select {
		case now := <-t.C:
			ms.hist.Add(ms.point(now))
		case <-ms.stop:
			return
		}
	}
}

func (ms *Server) point(now time.Time) status.RatePoint {
	_, slots, retired := ms.board.Snapshot()
	for _, s := range slots {
		retired.Add(s)
	}
	prep := retired.Role("prep")
	return status.RatePoint{At: now, Requests: prep.Requests, Errors: prep.Errors, Latency: prep.Latency}
}
