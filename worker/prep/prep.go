// Package prep is the CPU stage: it parses KServe V2 requests, validates
// them against the model's metadata before anything reaches an infer worker,
// forwards raw tensors to the least-loaded infer worker and turns the
// outputs back into V2 responses.
//
// Model metadata is never configured: the prep worker asks every infer
// worker, which read it from the model file through ONNX Runtime, at boot
// and when the master lists a new one. Those answers also say which models
// each infer worker serves (a model fails to load or warm up on one
// worker, worker.ModelStatus): a model's requests go only to infer workers
// that serve it (routes.go); a model none serves is unavailable, its
// metadata, ready and infer routes answer 503 with every worker's reason,
// and its preprocess settings are not checked, so one bad model never
// fails a prep worker's boot.
//
// What one request can make a prep worker spend is bounded before it is
// spent: the V2 decoder counts BYTES elements, inputs and outputs against
// the model before expanding them (v2.Limits); an image request's headers
// are all inspected, against max_pixels, the decoding-cost limits and
// max_request_pixels, before any image is decoded; and before each image
// the worker checks that its client still waits (the deadline the master
// passes on, and the master's connection), so work for a client that has
// had its 504 stops at the next image. Decodes pass the worker's decode
// gate (decodelanes.go), weighed by the memory each will hold (read from the
// header): the memory decoding holds is bounded by prep.max_decode_bytes,
// not by how many requests arrive together; small images have places of
// their own and never wait behind large ones; large ones decode at a
// lower CPU priority, on Go Ps of their own (GOMAXPROCS is twice the
// cpuset), so that requests never wait behind them in the Go scheduler;
// an image that could never fit gets 400 before anything is decoded. A
// large answer (its outputs and their JSON, up to 21 bytes an INT64)
// holds room in the same large lane from before its infer worker is
// asked (an image request's, grown before each chunk of images) until
// it is written, 503 at once without it, and is encoded at
// the same low priority (answercharge.go, answerrender.go): a model without
// batching answers any number of rows.
//
// A compressed body (Content-Encoding gzip or deflate) is decompressed
// before anything reads it (encoding.go): its decompressed size is what
// max_body_bytes bounds, a bomb stops there (413), and the decompressed
// bytes all requests hold at once are bounded by 4 × max_body_bytes (503
// beyond). After a burst of inflated bodies or of large decodes the
// worker hands the freed memory back to the OS (internal/osmem), rather
// than hold its peak until the Go scavenger returns it. Successful infer responses are compressed as Accept-Encoding
// asks. GET /v2/models/{m}/config answers Triton's model configuration
// from what the infer workers serving the model report (modelconfig.go).
//
// A model with response_cache (cache.go) is looked up in the host's shared
// response cache once its request is decoded into tensors (an image
// model's before its images are decoded, on the bytes sent), before the
// hand-off: a hit is rendered for the request (its id, JSON or binary) and
// never reaches an infer worker; a successful answer is stored after
// postprocessing. The cache never fails a request: a torn entry, a fault
// of the mapping or a Redis failure is a miss.
//
// The master's prefix check (precheck.go) asks, before it reads the rest
// of a large body, whether its first bytes are already wrong: the same
// rules, in the decoders' prefix modes, refusing only what the whole
// request would be refused for (the end of the prefix is never an error).
// It decodes no tensor beyond the prefix and no image, and is not counted
// as a request.
//
// Size: about 3,000 non-test lines, past the 2,500 a package should stay
// under. It is one process's request path (routing, the decode gate,
// image requests, the hand-off, compression, model configuration, the
// prefix check, the response cache's lookup and store), and the parts
// that hold no handler state are the next to leave: the prefix check's
// image rules (precheck_image.go) belong with imageprep's, the
// compression glue (encoding.go) with httpcoding, and the model
// configuration's rendering (modelconfig.go) with internal/v2.
package prep

import (
	"errors"
	"runtime"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

// Run is the prep worker's main: learn the models, serve, drain.
func Run(rt *worker.Runtime) error {
	timeout := rt.Spec.UpstreamTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	if len(rt.Spec.InferSockets) == 0 {
		rt.Fail(errors.New("no infer worker sockets in the spec"))
	}
	up := lb.New(lb.Options{Timeout: timeout, Logger: rt.Log})
	counters := map[string]shm.ModelSlot{}
	for i, m := range rt.Spec.Models {
		counters[m.Name] = rt.Slot().Model(i)
	}
	r := newRouter(up, rt.Spec.Processing, counters, rt.Log)
	r.caches = openCaches(rt.Spec.Processing, rt.Log)
	r.maxBody = rt.Spec.MaxBodyBytes
	r.gate = newDecodeGate(decodeBudget(rt.Spec.MaxDecodeBytes, rt.Spec.Processing))
	// A P for each large decode beside the cpuset's: a large decode
	// holding one of the cpuset's only Ps would make every request this
	// worker handles wait for the Go scheduler's 10ms time slices; on a
	// P of its own, its niced thread yields the CPU to them through the
	// kernel's scheduler instead (nicethread.go).
	runtime.GOMAXPROCS(2 * r.gate.places)
	rt.Log.Info().Int64("budget", r.gate.budget).Int64("small", r.gate.small).Int("places", r.gate.places).
		Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("decode gate")
	if err := r.boot(rt.Spec.InferSockets); err != nil {
		rt.Fail(err)
	}
	h := &handler{routes: r, up: up, timeout: timeout, log: rt.Log, arena: openArena(rt), board: rt.Slot(),
		bodies: newBodyDecoder(rt.Spec.MaxBodyBytes)}
	h.bodies.gate, h.bodies.slot = r.gate, h.board
	if h.arena != nil {
		defer h.arena.Close()
		if h.board != nil {
			stop := make(chan struct{})
			defer close(stop)
			go publishArena(h.arena, h.board, rt.Log, stop)
		}
	}
	srv := newServer(rt.Spec, rt.Count(h.serve), h.transportError, fasthttpLogger{rt})
	return rt.Serve(srv)
}

// setUpstreams points the pool of infer workers this prep worker feeds at
// sockets: the lb's least-connections pick (fewest requests this worker has
// in flight there, among those serving the request's model: routes.go)
// with retry only while a frame is provably unsent. Each socket is its own
// backend name, so a replacement infer worker (new socket) is a new
// backend and the old one drains.
func setUpstreams(up *lb.Proxy, sockets []string) {
	bs := make([]lb.Backend, len(sockets))
	for i, s := range sockets {
		bs[i] = lb.Backend{Name: s, Socket: s}
	}
	up.SetBackends(bs)
}

// model is one served model as the prep stage sees it.
type model struct {
	md tensor.Metadata // as the infer workers declare it
	// api is the model as clients see it: md, except that an image
	// model's input is the BYTES vector of encoded images.
	api      tensor.Metadata
	metaJSON []byte // V2 model metadata response of api, encoded once
	// image, for an image model, builds its input from encoded images.
	image *imageInput
	// classify is the configured classification postprocessing, if any.
	classify *classifier
	// counters are the model's requests in the scoreboard (Triton's
	// success and failure counts); the zero value when there is none.
	counters shm.ModelSlot
	// cache is the model's response cache (cache.go); nil = none.
	cache *modelCache
	// unavailable is why the infer workers do not serve the model (it
	// failed to load or warm up); "" = it serves. Its routes answer 503.
	unavailable string
	// maxBody is max_body_bytes, from which the bound on a request's
	// BYTES elements is derived (limits); 0: v2's default.
	maxBody int64
}

// fasthttpLogger routes fasthttp's own messages into the worker's log.
type fasthttpLogger struct{ rt *worker.Runtime }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.rt.Log.Warn().Msgf(format, args...)
}
