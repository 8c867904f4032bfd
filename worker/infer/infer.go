// Package infer is the inference worker: it loads every configured model into
// ONNX Runtime, warms each one up at every batch size it may run, and runs
// tensor frames sent by prep workers over its Unix socket.
//
// Endpoints (internal, spoken only by prep workers):
//
//	GET  /metadata  JSON array of tensor.Metadata, one per model
//	POST /infer     body: tensor.Request frame, with the request's priority
//	                and deadline in worker.PriorityHeader and
//	                worker.DeadlineHeader; or, with the shared-memory
//	                handoff, worker.ArenaHeader and worker.SlotHeader naming
//	                a slot of the prep worker's arena, claimed before it is
//	                read (409 when it cannot be: its prep worker revoked
//	                it) and marked done whatever the outcome; reply: tensor
//	                frame of outputs (in the slot when it fits), or
//	                a non-200 status with the error message as text (503
//	                with Retry-After when the model's queue is full or the
//	                request's deadline passed while it was queued)
//	GET  /stats     JSON object: model name -> batch.Stats since the worker
//	                started; prep workers sum them over every infer worker
//
// Each model's requests go through its own dynamic batcher (internal/batch),
// configured by worker.Model.Batching.
package infer

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/tensor"
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
	stop := make(chan struct{})
	defer close(stop)
	go s.arenas.janitor(10*time.Second, stop)
	srv := &fasthttp.Server{
		Handler:            rt.Count(s.handle),
		Name:               "supervisor-infer",
		MaxRequestBodySize: maxFrameBytes,
		Logger:             fasthttpLogger{rt},
	}
	return rt.Serve(srv)
}

// server is the infer worker's state: its models by name.
type server struct {
	models   map[string]*model
	metaJSON []byte
	arenas   arenas // prep workers' shared-memory arenas
}

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
	s := &server{models: map[string]*model{}}
	var metas []tensor.Metadata
	var obs observers
	for i, m := range rt.Spec.Models {
		mod, err := openModel(m, ort.Options{IntraOpThreads: rt.Spec.IntraOpThreads, CUDA: cuda}, obs.add(rt.Slot(), i))
		if err != nil {
			s.close()
			return nil, err
		}
		s.models[m.Name] = mod
		rt.Log.Info().Str("model", m.Name).Str("path", m.Path).Any("batching", m.Batching).Msg("model loaded and warmed up")
		metas = append(metas, mod.md)
	}
	b, err := json.Marshal(metas)
	if err != nil {
		s.close()
		return nil, err
	}
	s.metaJSON = b
	obs.arm()
	return s, nil
}

func (s *server) close() {
	for _, m := range s.models {
		m.close()
	}
}

func (s *server) handle(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/infer":
		s.infer(ctx)
	case "/metadata":
		ctx.SetContentType("application/json")
		ctx.SetBody(s.metaJSON)
	case "/stats":
		s.stats(ctx)
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

func (s *server) infer(ctx *fasthttp.RequestCtx) {
	in, err := s.frame(ctx)
	if err != nil {
		ctx.Error(err.Error(), frameStatus(err))
		return
	}
	defer s.finish(in)
	// With the shared-memory handoff the inputs stay in the prep worker's
	// slot: read in place, by the batcher and ONNX Runtime.
	req, err := tensor.ParseRequest(in.frame)
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
		return
	}
	m, ok := s.models[req.Model]
	if !ok {
		ctx.Error(fmt.Sprintf("unknown model %q", req.Model), fasthttp.StatusNotFound)
		return
	}
	r, err := schedule(ctx, req.Inputs)
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
		return
	}
	outs, err := m.submit(r)
	if err == nil {
		outs, err = m.selectOutputs(outs, req.Outputs)
	}
	if err != nil {
		replyError(ctx, err)
		return
	}
	in.reply(ctx, outs)
}

// fasthttpLogger routes fasthttp's own messages into the worker's log.
type fasthttpLogger struct{ rt *worker.Runtime }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.rt.Log.Warn().Msgf(format, args...)
}
