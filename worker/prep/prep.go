// Package prep is the CPU stage: it parses KServe V2 requests (JSON,
// binary tensors, images, compressed bodies), validates them against the
// model's metadata before anything reaches an infer worker, forwards the
// tensors to the least-loaded infer worker that serves the model, and
// turns the outputs back into V2 responses.
//
// Invariants:
//
//   - Model metadata is never configured: it is asked of every infer
//     worker, which also says which models it serves; a model none serves
//     is unavailable (503 with every worker's reason) and never fails a
//     prep worker's boot (routes.go). The boot waits, within
//     boot_timeout, for an infer worker that is slow or restarting to
//     answer; only none answering by then fails it (router.boot).
//   - What one request can make it spend is bounded before it is spent:
//     counts of BYTES elements, inputs and outputs (v2.Limits), every
//     image header before any image is decoded, and the client's deadline
//     and connection before each image.
//   - Decodes, inflated bodies and large answers hold room in the decode
//     gate (worker/prep/decodegate, answercharge.go), weighed by the memory they
//     will hold, so that memory is bounded by prep.max_decode_bytes and
//     4 × max_body_bytes, not by how many requests arrive together.
//   - The response cache (worker/prep/modelcache) never fails a request: a torn entry, a
//     fault or a Redis failure is a miss.
//   - The prefix check (precheck.go) refuses only what the whole request
//     would be refused for; it decodes no tensor beyond the prefix and no
//     image, and is not counted as a request.
//
// The limits and what clients see: docs/limits.md, docs/images.md,
// docs/http-api.md and docs/response-cache.md.
//
// Size: about 2,550 non-test lines, just over the 2,500 a package should
// stay under. What is left is the handler and the router it serves by
// (handler.go, routes.go, with the boot-time wait for infer workers),
// which share the per-request state every route touches; the image
// inputs, the cache, the decode gate, the answer cost and the Triton
// config have already left. The next split is the router's boot and
// socket upkeep (routes.go) into a package of its own.
package prep

import (
	"runtime"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/imageinput"
	"github.com/supervisor-dev/supervisor/worker/prep/modelcache"
)

// Size: about 2,200 non-test lines, under the 2,500 a package should
// hold; the parts that hold no handler state live in subpackages
// (decodegate, modelcache, tritonconfig, answercost, schedule,
// nicethread, inferquery, imageinput). What would leave next: the
// compression glue (encoding.go) for httpcoding.

// Run is the prep worker's main: learn the models, serve, drain.
func Run(rt *worker.Runtime) error {
	timeout := rt.Spec.UpstreamTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	up := lb.New(lb.Options{Timeout: timeout, Logger: rt.Log})
	counters := map[string]shm.ModelSlot{}
	for i, m := range rt.Spec.Models {
		counters[m.Name] = rt.Slot().Model(i)
	}
	r := newRouter(up, rt.Spec.Processing, counters, rt.Log)
	r.caches = modelcache.Open(rt.Spec.Processing, rt.Log)
	r.maxBody = rt.Spec.MaxBodyBytes
	r.gate = decodegate.New(decodegate.Budget(rt.Spec.MaxDecodeBytes, rt.Spec.Processing))
	// A P for each large decode beside the cpuset's: a large decode
	// holding one of the cpuset's only Ps would make every request this
	// worker handles wait for the Go scheduler's 10ms time slices; on a
	// P of its own, its niced thread yields the CPU to them through the
	// kernel's scheduler instead (worker/prep/nicethread).
	runtime.GOMAXPROCS(2 * r.gate.Places())
	rt.Log.Info().Int64("budget", r.gate.Total()).Int64("small", r.gate.Small()).Int("places", r.gate.Places()).
		Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("decode gate")
	if err := r.boot(rt.Spec.InferSockets, bootDeadline(rt.Spec.BootTimeout)); err != nil {
		rt.Fail(err)
	}
	h := &handler{routes: r, up: up, timeout: timeout, log: rt.Log, arena: openArena(rt), board: rt.Slot(),
		bodies: newBodyDecoder(rt.Spec.MaxBodyBytes)}
	h.bodies.gate, h.bodies.slot = r.gate, h.board
	if rt.Spec.RegionsFD > 0 {
		rd, err := sysshm.NewReader(rt.Spec.RegionsFD)
		if err != nil {
			rt.Fail(err)
		}
		h.bodies.regions = rd
	}
	if h.arena != nil {
		defer h.arena.Close()
		if h.board != nil {
			stop := make(chan struct{})
			defer close(stop)
			go publishArena(h.arena, h.board, rt.Log, stop)
		}
	}
	var stopTracing func()
	h.tracer, stopTracing = rt.StartTracing()
	defer stopTracing()
	srv := newServer(rt.Spec, rt.Count(h.serve), h.transportError, fasthttpLogger{rt})
	return rt.Serve(srv)
}

// bootDeadline is when a prep worker spawned now stops waiting for its
// infer workers: before boot_timeout, so that it fails with its own
// error (which infer worker, what it answered) rather than be killed
// unexplained. Zero (ask once) when there is no boot_timeout.
func bootDeadline(bootTimeout time.Duration) time.Time {
	if bootTimeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(bootTimeout - min(bootTimeout/10, 5*time.Second))
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
	image *imageinput.Input
	// classify is the configured classification postprocessing, if any.
	classify *classifier
	// counters are the model's requests in the scoreboard (Triton's
	// success and failure counts); the zero value when there is none.
	counters shm.ModelSlot
	// cache is the model's response cache (worker/prep/modelcache); nil = none.
	cache *modelcache.Cache
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
