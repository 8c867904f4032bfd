// Package infer is the inference worker: it loads every configured model into
// ONNX Runtime, warms each one up, and runs tensor frames sent by prep
// workers over its Unix socket.
//
// Endpoints (internal, spoken only by prep workers):
//
//	GET  /metadata  JSON array of tensor.Metadata, one per model
//	POST /infer     body: tensor.Request frame; reply: tensor frame of outputs,
//	                or a non-200 status with the error message as text
package infer

import (
	"encoding/json"
	"errors"
	"fmt"

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
	srv := &fasthttp.Server{
		Handler:            rt.Count(s.handle),
		Name:               "supervisor-infer",
		MaxRequestBodySize: maxFrameBytes,
		Logger:             fasthttpLogger{rt},
	}
	return rt.Serve(srv)
}

// server is the infer worker's state: its sessions by model name.
type server struct {
	sessions map[string]*ort.Session
	metaJSON []byte
}

func load(rt *worker.Runtime) (*server, error) {
	// "" lets ort.Init discover the library.
	if err := ort.Init(rt.Spec.ORTLibrary); err != nil {
		return nil, err
	}
	s := &server{sessions: map[string]*ort.Session{}}
	var metas []tensor.Metadata
	for _, m := range rt.Spec.Models {
		sess, err := ort.Open(m.Path, m.Name, ort.Options{IntraOpThreads: rt.Spec.IntraOpThreads})
		if err != nil {
			s.close()
			return nil, fmt.Errorf("model %q: %w", m.Name, err)
		}
		s.sessions[m.Name] = sess
		md := sess.Metadata()
		if err := warmUp(sess, &md); err != nil {
			s.close()
			return nil, fmt.Errorf("model %q: warm-up inference failed: %w", m.Name, err)
		}
		rt.Log.Info().Str("model", m.Name).Str("path", m.Path).Msg("model loaded and warmed up")
		metas = append(metas, md)
	}
	b, err := json.Marshal(metas)
	if err != nil {
		s.close()
		return nil, err
	}
	s.metaJSON = b
	return s, nil
}

func (s *server) close() {
	for _, sess := range s.sessions {
		_ = sess.Close()
	}
}

// warmUp runs one inference on zero-filled inputs (dynamic dimensions = 1),
// so the first client request does not pay ORT's first-run cost.
func warmUp(sess *ort.Session, md *tensor.Metadata) error {
	inputs := make([]tensor.Tensor, len(md.Inputs))
	for i, in := range md.Inputs {
		shape := make([]int64, len(in.Shape))
		for j, d := range in.Shape {
			shape[j] = max(d, 1)
		}
		n, err := tensor.NumElements(shape)
		if err != nil {
			return err
		}
		inputs[i] = tensor.Tensor{Name: in.Name, DType: in.DType, Shape: shape,
			Data: make([]byte, n*int64(in.DType.Size()))}
	}
	_, err := sess.Run(inputs, nil)
	return err
}

func (s *server) handle(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/infer":
		s.infer(ctx)
	case "/metadata":
		ctx.SetContentType("application/json")
		ctx.SetBody(s.metaJSON)
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

func (s *server) infer(ctx *fasthttp.RequestCtx) {
	req, err := tensor.ParseRequest(ctx.PostBody())
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
		return
	}
	sess, ok := s.sessions[req.Model]
	if !ok {
		ctx.Error(fmt.Sprintf("unknown model %q", req.Model), fasthttp.StatusNotFound)
		return
	}
	outs, err := sess.Run(req.Inputs, req.Outputs)
	if errors.Is(err, ort.ErrBadInput) {
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
		return
	}
	if err != nil {
		// Prep validated the request against this model's metadata, so
		// any other failure is the server's, not the client's.
		ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
		return
	}
	ctx.SetContentType("application/octet-stream")
	ctx.Response.SetBodyRaw(tensor.AppendTensors(nil, outs))
}

// fasthttpLogger routes fasthttp's own messages into the worker's log.
type fasthttpLogger struct{ rt *worker.Runtime }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.rt.Log.Warn().Msgf(format, args...)
}
