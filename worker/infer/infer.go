// Package infer is the inference worker: it loads every configured model
// into ONNX Runtime, warms each one up at every batch size it may run, and
// runs tensor frames that prep workers send over its Unix socket (handle:
// /metadata, /infer, /stats), each model through its own dynamic batcher
// (internal/batch, configured by worker.Model.Batching).
//
// Invariants:
//
//   - Models are isolated: one that fails to load or warm up is
//     unavailable (503 with its reason) and the others serve. Before each
//     model the worker tells the master (worker.ModelState), so a crash in
//     ONNX Runtime names the model it happened on.
//   - Each run records its requests' tokens (worker.TokenHeader) in the
//     scoreboard slot while it executes, so the master blames a crash only
//     on them; a poison suspect's run has the worker to itself (atwork.go).
//   - Each run is bounded by worker.Model.MaxRunTime (runbound.go): ORT is
//     told to terminate, the batch gets 500 with worker.RunTimeoutHeader,
//     and a run still not returned a grace later makes the worker exit
//     (exitWedged), since heartbeats would keep a stuck ORT thread serving.
//   - A run also stops once every prep worker waiting on its batch has
//     closed its connection (abandonedBy); a request abandoned while it
//     queues is answered unrun.
//   - An arena slot is claimed before it is read (409 when its prep
//     worker revoked it; 503 with worker.ArenaRefusedHeader when the arena
//     cannot be opened, and the prep worker resends inline) and marked
//     done whatever the outcome (handoff.go).
//   - A panic in a handler is answered 500 and logged with its stack, and
//     the worker serves on (recoverPanic): a bug, not the request's crash.
//   - A reload that only adds or retires models changes them in place
//     (inplace.go): the models kept keep their sessions and batchers; the
//     catalog a request reads is swapped whole, never edited.
//
// What operators see of this: docs/model-isolation.md.
package infer

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/tracing"
	"github.com/supervisor-dev/supervisor/worker"
)

// maxFrameBytes bounds one request frame. Frames carry raw tensors, smaller
// than the JSON they came from, and prep bounds its own bodies.
const maxFrameBytes = 1 << 30

// Run is the infer worker's main: load, warm up, serve, drain.
func Run(rt *worker.Runtime) error {
	s, err := load(rt)
	if err != nil {
		rt.Fail(err)
	}
	defer s.close()
	var stopTracing func()
	s.tracer, stopTracing = rt.StartTracing() // trace.go
	defer stopTracing()
	stop := make(chan struct{})
	defer close(stop)
	go s.arenas.janitor(10*time.Second, stop)
	counted := rt.Count(s.handle)
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if string(ctx.Path()) == worker.ModelsPath {
				s.changeModels(ctx) // the master's, not a request (inplace.go)
				return
			}
			counted(ctx)
		},
		Name:               "supervisor-infer",
		MaxRequestBodySize: maxFrameBytes,
		Logger:             fasthttpLogger{rt},
	}
	return rt.Serve(srv)
}

// server is the infer worker's state: its models, as a catalog that a
// reload may swap in place (inplace.go).
type server struct {
	cat atomic.Pointer[catalog]
	// changeMu serialises changes in place (the master sends one at a
	// time; this keeps a second from interleaving).
	changeMu sync.Mutex
	rt       *worker.Runtime
	arenas   arenas          // prep workers' shared-memory arenas
	runs     *runs           // what the models' runs are at work on (atwork.go)
	tracer   *tracing.Tracer // nil: tracing off (trace.go)
	log      zerolog.Logger
	// panicHook, if set, runs in every /infer request once its frame is
	// read; tests use it to make the handler panic (recoverPanic).
	panicHook func(*fasthttp.RequestCtx)
}

// load opens every model it can. Only a library that cannot initialise, or
// a GPU that no model can use (every model failed with
// ort.ErrProviderUnavailable), fails
// the worker: a model that fails is unavailable, with its reason.
func load(rt *worker.Runtime) (*server, error) {
	cuda := rt.Spec.Provider == worker.ProviderCUDA
	if cuda {
		// CUDA installs signal handlers over the Go runtime's while it
		// initialises and runs the first batches (the warm-up).
		defer ort.KeepGoSignalHandlers()()
	}
	// "" lets ort.Init discover the library.
	if err := ort.Init(rt.Spec.ORTLibrary); err != nil {
		return nil, err
	}
	s := &server{rt: rt, runs: &runs{slot: rt.Slot()}, log: rt.Log}
	c := newCatalog()
	var obs observers
	var gpuErrs []error
	for i, m := range rt.Spec.Models {
		st, err := s.loadModel(c, m, rt.Spec.Unavailable, obs.add(rt.Slot(), i))
		if errors.Is(err, ort.ErrProviderUnavailable) {
			gpuErrs = append(gpuErrs, err)
		}
		c.status = append(c.status, st)
	}
	s.cat.Store(c)
	if len(gpuErrs) > 0 && len(gpuErrs) == len(rt.Spec.Models) {
		// Not a model's fault: the worker's device or library is unusable.
		s.close()
		return nil, fmt.Errorf("no model can run on this worker's GPU: %w", gpuErrs[0])
	}
	if err := c.seal(); err != nil {
		s.close()
		return nil, err
	}
	obs.arm()
	return s, nil
}

// modelOptions are the ORT session options of model m in this worker.
func modelOptions(spec *worker.Spec, m worker.Model) ort.Options {
	o := ort.Options{IntraOpThreads: spec.IntraOpThreads, CUDA: spec.Provider == worker.ProviderCUDA, Outputs: m.OutputBinding}
	if m.GPU != nil {
		o.GPU = *m.GPU
	}
	return o
}

// loadModel opens and warms up one model into c, telling the master
// before it starts (so that a crash inside ONNX Runtime is pinned on this
// model) and after, and returns its status (GET /metadata's entry). A
// model the master quarantined (in skip) is not touched.
func (s *server) loadModel(c *catalog, m worker.Model, skip map[string]string, obs batch.Observer) (worker.ModelStatus, error) {
	rt := s.rt
	st := worker.ModelStatus{Metadata: tensor.Metadata{Name: m.Name, Platform: ort.Platform},
		Serving: &worker.Serving{Batching: m.Batching, Provider: rt.Spec.Provider, GPUIndex: rt.Spec.GPUIndex}}
	log := rt.Log.With().Str("model", m.Name).Str("path", m.Path).Logger()
	if reason, ok := skip[m.Name]; ok {
		err := errors.New(reason)
		c.unavailable[m.Name], st.Unavailable = reason, reason
		log.Error().Err(err).Msg("model unavailable: skipped, a previous worker died while warming it up")
		rt.ModelState(m.Name, worker.ModelUnavailable, reason)
		return st, err
	}
	rt.ModelState(m.Name, worker.ModelWarming, "")
	mod, err := openIdentified(m.Path, func() (*model, error) {
		return openModel(m, modelOptions(rt.Spec, m), obs, s.runs, func(model string, ran time.Duration) { wedged(rt, model, ran) })
	})
	if err != nil {
		c.unavailable[m.Name], st.Unavailable = err.Error(), err.Error()
		log.Error().Err(err).Msg("model unavailable: the other models serve")
		rt.ModelState(m.Name, worker.ModelUnavailable, err.Error())
		return st, err
	}
	c.models[m.Name] = mod
	st.Metadata, st.Warning = mod.md, mod.warmupFailed
	if mod.warmupFailed != "" {
		log.Warn().Str("identity", mod.identity).Any("batching", m.Batching).Str("warmup", m.Warmup).Str("reason", mod.warmupFailed).
			Msg("model loaded; its warm-up failed: it serves, and its first requests pay ONNX Runtime's first runs")
	} else {
		log.Info().Str("identity", mod.identity).Any("batching", m.Batching).Str("warmup", m.Warmup).Msg("model loaded and warmed up")
	}
	rt.ModelState(m.Name, worker.ModelReady, mod.warmupFailed)
	return st, nil
}

func (s *server) close() {
	for _, m := range s.cat.Load().models {
		m.close()
	}
}

// handle serves the endpoints only prep workers speak:
//
//	GET  /metadata  JSON array of worker.ModelStatus, one per model in Spec
//	                order: tensor.Metadata, "unavailable" (the reason) for a
//	                model that failed to load or warm up, and "serving"
//	                (batching, provider, GPU index: Triton's model config)
//	POST /infer     a tensor.Request frame, inline or in an arena slot
//	                (worker.ArenaHeader, worker.SlotHeader), with
//	                worker.PriorityHeader and worker.DeadlineHeader; reply:
//	                the outputs' frame (in the slot when it fits), or a
//	                non-200 status with the error as text (503 with
//	                Retry-After when the queue is full or the deadline passed
//	                while queued)
//	GET  /stats     model name -> batch.Stats since the worker started; prep
//	                workers sum them over every infer worker
func (s *server) handle(ctx *fasthttp.RequestCtx) {
	defer s.recoverPanic(ctx)
	switch string(ctx.Path()) {
	case "/infer":
		s.infer(ctx)
	case "/metadata":
		ctx.SetContentType("application/json")
		ctx.SetBody(s.cat.Load().metaJSON)
	case "/stats":
		s.stats(ctx)
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

func (s *server) infer(ctx *fasthttp.RequestCtx) {
	it := s.beginTrace(ctx, ctx.Time()) // trace.go; nil: not traced
	var model string                    // for the trace: what ran, and why it failed
	var failed error
	if it != nil {
		defer func() { it.end(ctx, model, failed) }()
	}
	in, err := s.frame(ctx)
	if err != nil {
		refuseFrame(ctx, err)
		return
	}
	defer s.finish(in)
	if s.panicHook != nil {
		s.panicHook(ctx)
	}
	// With the shared-memory handoff the inputs stay in the prep worker's
	// slot: read in place, by the batcher and ONNX Runtime.
	req, err := tensor.ParseRequest(in.frame)
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
		return
	}
	model = req.Model
	cat := s.cat.Load()
	m, ok := cat.models[req.Model]
	if reason, down := cat.unavailable[req.Model]; down {
		ctx.Error(fmt.Sprintf("model %q is unavailable: %s", req.Model, reason), fasthttp.StatusServiceUnavailable)
		return
	}
	if !ok {
		ctx.Error(fmt.Sprintf("unknown model %q", req.Model), fasthttp.StatusNotFound)
		return
	}
	if err := m.checkDivisors(req.Inputs); err != nil {
		replyError(ctx, err)
		return
	}
	r, err := schedule(ctx, req.Inputs)
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
		return
	}
	it.timed(&r)
	outs, err := m.submit(r)
	if err == nil {
		outs, err = m.selectOutputs(outs, req.Outputs)
	}
	failed = err
	if err != nil {
		replyError(ctx, err)
		return
	}
	ctx.Response.Header.Set(worker.ModelIDHeader, m.identity)
	in.reply(ctx, outs)
	// One line a request at debug (log_level, or POST /v2/logging's
	// log_verbose_level): what ran, for following requests through.
	s.log.Debug().Str("model", req.Model).Int("inputs", len(req.Inputs)).Msg("inference answered")
}

// recoverPanic answers a request whose handler panicked (a bug in this
// worker's Go code, outside a model run: those run on the batcher's
// goroutines) with 500 and logs the panic with its stack, and the worker
// serves on. A panic left alone ends the process, which the master takes
// for a crash on the requests it held: their bodies struck towards the
// poison quarantine and sent again to another worker, which the same bug
// kills too. The request's arena slot is finished on the way (infer's
// deferred finish), and the scoreboard counts it a failed request
// (Backend: Count's tracking runs around handle).
func (s *server) recoverPanic(ctx *fasthttp.RequestCtx) {
	r := recover()
	if r == nil {
		return
	}
	s.log.Error().Interface("panic", r).Str("path", string(ctx.Path())).Str("stack", string(debug.Stack())).
		Msg("infer worker: recovered a panic in the request handler; answered 500 and kept serving (a bug: report it with this stack)")
	// Error resets the response: no half-set headers or body go out.
	ctx.Error(fmt.Sprintf("internal error in the infer worker (a bug, logged with its stack): %v", r), fasthttp.StatusInternalServerError)
}

// exitWedged is the infer worker's exit status when a model run did not
// return after it was told to terminate (runbound.go).
const exitWedged = 3

// wedged ends the worker: a run of model has held an ORT thread and a
// batch instance for ran, past its max_run_time and the grace to
// terminate. Heartbeats would go on (they are another goroutine), so the
// master would never replace it; exiting hands every request it holds a
// 502 (the prep worker's "infer worker exited", a poison strike) and the
// master starts a fresh worker.
func wedged(rt *worker.Runtime, model string, ran time.Duration) {
	rt.Log.Error().Str("model", model).Dur("ran", ran).Int("exit_status", exitWedged).
		Msg("a model run did not stop when ONNX Runtime was told to terminate it at max_run_time: exiting so that the master replaces this worker")
	os.Exit(exitWedged)
}

// fasthttpLogger routes fasthttp's own messages into the worker's log.
type fasthttpLogger struct{ rt *worker.Runtime }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.rt.Log.Warn().Msgf(format, args...)
}
