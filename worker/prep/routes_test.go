package prep

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/worker"
)

// testMetadata is a model taking x FP32 [-1, 1] and giving y FP32 [-1, 1].
func testMetadata(name string) tensor.Metadata {
	return tensor.Metadata{Name: name, Platform: "onnxruntime_onnx",
		Inputs:  []tensor.Spec{{Name: "x", DType: tensor.FP32, Shape: []int64{-1, 1}}},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{-1, 1}}}}
}

// modelInfer is an infer worker on a real Unix socket, speaking the infer
// worker's contract (worker/infer): GET /metadata lists every model as a
// worker.ModelStatus, those in down with their reason; POST /infer takes an
// inline request frame and answers an output frame, or 503 for a model in
// down. inferred counts /infer requests per model.
type modelInfer struct {
	*fakeInfer
	mu       sync.Mutex
	inferred map[string]int
}

func startModelInfer(t *testing.T, models []string, down map[string]string) *modelInfer {
	t.Helper()
	return startModelInferAt(t, filepath.Join(t.TempDir(), "infer.sock"), models, down)
}

func startModelInferAt(t *testing.T, socket string, models []string, down map[string]string) *modelInfer {
	t.Helper()
	var sts []worker.ModelStatus
	for _, name := range models {
		st := worker.ModelStatus{Metadata: testMetadata(name), Unavailable: down[name]}
		if st.Unavailable != "" {
			st.Metadata = tensor.Metadata{Name: name, Platform: "onnxruntime_onnx"}
		}
		sts = append(sts, st)
	}
	meta, err := json.Marshal(sts)
	if err != nil {
		t.Fatal(err)
	}
	mi := &modelInfer{inferred: map[string]int{}}
	mi.fakeInfer = startFakeInferAt(t, socket, func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/metadata":
			ctx.SetBody(meta)
		case "/infer":
			req, err := tensor.ParseRequest(ctx.PostBody())
			if err != nil {
				ctx.Error(err.Error(), fasthttp.StatusBadRequest)
				return
			}
			mi.mu.Lock()
			mi.inferred[req.Model]++
			mi.mu.Unlock()
			if reason := down[req.Model]; reason != "" {
				ctx.Error(fmt.Sprintf("model %q is unavailable: %s", req.Model, reason), fasthttp.StatusServiceUnavailable)
				return
			}
			out := tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{1, 1}, Data: make([]byte, 4)}
			ctx.SetBody(tensor.AppendTensors(nil, []tensor.Tensor{out}))
		default:
			ctx.Error("not found", fasthttp.StatusNotFound)
		}
	})
	return mi
}

func (mi *modelInfer) count(model string) int {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.inferred[model]
}

// routedHandler is a prep handler (no arena) that learned its models from
// the infer workers on sockets, as at boot.
func routedHandler(t *testing.T, sockets ...string) *handler {
	t.Helper()
	up := lb.New(lb.Options{Timeout: time.Minute, Logger: zerolog.Nop()})
	r := newRouter(up, nil, nil, zerolog.Nop())
	if err := r.boot(sockets, time.Time{}); err != nil {
		t.Fatal(err)
	}
	return &handler{routes: r, up: up, timeout: time.Minute, log: zerolog.Nop(), bodies: newBodyDecoder(0)}
}

// call runs one request through the handler's routes.
func call(h *handler, method, path, body string) (int, string) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	if body != "" {
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBodyString(body)
	}
	h.serve(&ctx)
	return ctx.Response.StatusCode(), string(ctx.Response.Body())
}

const inferBody = `{"inputs":[{"name":"x","shape":[1,1],"datatype":"FP32","data":[1]}]}`

func inferModel(h *handler, model string) (int, string) {
	return call(h, fasthttp.MethodPost, "/v2/models/"+model+"/infer", inferBody)
}

// TestRequestsGoOnlyToWorkersServingTheModel: two infer workers, "b" out
// of memory on the first: every request for b reaches the second, and b
// is available with the second's metadata; "a", served by both, is shared;
// "c", served by neither, answers 503 naming both reasons and reaches no
// infer worker.
func TestRequestsGoOnlyToWorkersServingTheModel(t *testing.T) {
	models := []string{"a", "b", "c"}
	w0 := startModelInfer(t, models, map[string]string{"b": "out of memory on GPU 0", "c": "bad file"})
	w1 := startModelInfer(t, models, map[string]string{"c": "warm-up failed"})
	h := routedHandler(t, w0.socket, w1.socket)

	for i := range 10 {
		if code, body := inferModel(h, "b"); code != fasthttp.StatusOK {
			t.Fatalf("request %d for b: %d %s, want 200", i, code, body)
		}
		if code, body := inferModel(h, "a"); code != fasthttp.StatusOK {
			t.Fatalf("request %d for a: %d %s, want 200", i, code, body)
		}
	}
	if n0, n1 := w0.count("b"), w1.count("b"); n0 != 0 || n1 != 10 {
		t.Fatalf("b reached the worker without it %d times and the one serving it %d times; want 0 and 10", n0, n1)
	}
	if n0, n1 := w0.count("a"), w1.count("a"); n0 == 0 || n1 == 0 || n0+n1 != 10 {
		t.Fatalf("a reached the workers %d and %d times; want both used, 10 in all", n0, n1)
	}
	if code, body := call(h, fasthttp.MethodGet, "/v2/models/b", ""); code != fasthttp.StatusOK || !strings.Contains(body, `"name":"x"`) {
		t.Fatalf("metadata of b: %d %s; want 200 with its inputs (from the worker that serves it)", code, body)
	}
	if code, body := call(h, fasthttp.MethodGet, "/v2/models/b/ready", ""); code != fasthttp.StatusOK {
		t.Fatalf("b ready: %d %s, want 200", code, body)
	}
	for _, path := range []string{"/v2/models/c/infer", "/v2/models/c/ready", "/v2/models/c"} {
		method := fasthttp.MethodGet
		if strings.HasSuffix(path, "infer") {
			method = fasthttp.MethodPost
		}
		code, body := call(h, method, path, map[string]string{fasthttp.MethodPost: inferBody}[method])
		var e struct{ Error string }
		if code != fasthttp.StatusServiceUnavailable || json.Unmarshal([]byte(body), &e) != nil ||
			!strings.Contains(e.Error, "bad file") || !strings.Contains(e.Error, "warm-up failed") {
			t.Fatalf("%s %s: %d %s; want 503 with both workers' reasons", method, path, code, body)
		}
	}
	if n := w0.count("c") + w1.count("c"); n != 0 {
		t.Fatalf("c, served by no worker, reached them %d times", n)
	}
}

// TestReplacingAWorkerDoesNotFlapItsModels: the only worker serving b is
// replaced (the master PUTs the list with the replacement, then without
// the old one) while requests for b run: none fails. A list in which no
// worker serves b makes it unavailable with the reason; one that serves it
// again brings it back.
func TestReplacingAWorkerDoesNotFlapItsModels(t *testing.T) {
	models := []string{"b"}
	oom := map[string]string{"b": "out of memory on GPU 0"}
	w0 := startModelInfer(t, models, oom)
	w1 := startModelInfer(t, models, nil)
	w2 := startModelInfer(t, models, nil)
	h := routedHandler(t, w0.socket, w1.socket)

	const clients, each = 4, 50
	var failed atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	started := make(chan struct{}, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for range each {
				if code, body := inferModel(h, "b"); code != fasthttp.StatusOK {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", code, body))
				}
			}
		}()
	}
	for range clients {
		<-started
	}
	for range 5 { // replace w1 by w2 and back, surge-first, under load
		h.routes.update([]string{w0.socket, w1.socket, w2.socket})
		h.routes.update([]string{w0.socket, w2.socket})
		h.routes.update([]string{w0.socket, w2.socket, w1.socket})
		h.routes.update([]string{w0.socket, w1.socket})
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d requests for b failed while its worker was replaced; first: %v", n, clients*each, firstFailure.Load())
	}
	if n := w0.count("b"); n != 0 {
		t.Fatalf("b reached the worker without it %d times", n)
	}

	h.routes.update([]string{w0.socket})
	if code, body := inferModel(h, "b"); code != fasthttp.StatusServiceUnavailable || !strings.Contains(body, "out of memory on GPU 0") {
		t.Fatalf("no worker serving b: %d %s; want 503 with the reason", code, body)
	}
	h.routes.update([]string{w0.socket, w2.socket})
	if code, body := inferModel(h, "b"); code != fasthttp.StatusOK {
		t.Fatalf("b served again: %d %s, want 200", code, body)
	}
}

// TestNoWorkerKeepsAvailability: with no infer worker listed at all (the
// master is restarting them) a model keeps its availability; its requests
// get 503 with Retry-After, a retry-later answer rather than a reason.
func TestNoWorkerKeepsAvailability(t *testing.T) {
	w := startModelInfer(t, []string{"a"}, nil)
	h := routedHandler(t, w.socket)
	h.routes.update(nil)
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("/v2/models/a/infer")
	ctx.Request.SetBodyString(inferBody)
	h.serve(&ctx)
	if ctx.Response.StatusCode() != fasthttp.StatusServiceUnavailable || len(ctx.Response.Header.Peek(fasthttp.HeaderRetryAfter)) == 0 ||
		strings.Contains(string(ctx.Response.Body()), "is unavailable") {
		t.Fatalf("no infer worker: %d %s; want 503 with Retry-After, not an unavailable model", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if code, _ := call(h, fasthttp.MethodGet, "/v2/models/a/ready", ""); code != fasthttp.StatusOK {
		t.Fatalf("a ready with no infer worker listed: %d, want 200 (availability kept)", code)
	}
}

// TestUnreadableWorkerIsAskedAgain: an infer worker whose metadata cannot
// be read (nobody listens on its socket yet) does not fail the boot while
// another answers; it gets no request, its models are not its to serve,
// and the next list the master PUTs reads it again.
func TestUnreadableWorkerIsAskedAgain(t *testing.T) {
	w0 := startModelInfer(t, []string{"a", "b"}, map[string]string{"b": "out of memory on GPU 0"})
	late := filepath.Join(t.TempDir(), "late.sock")
	h := routedHandler(t, w0.socket, late)
	code, body := inferModel(h, "b")
	if code != fasthttp.StatusServiceUnavailable || !strings.Contains(body, "out of memory on GPU 0") || !strings.Contains(body, "could not be read") {
		t.Fatalf("b with its only other worker unreadable: %d %s; want 503 with both reasons", code, body)
	}
	if code, body := inferModel(h, "a"); code != fasthttp.StatusOK {
		t.Fatalf("a: %d %s, want 200 from the worker that answered", code, body)
	}
	w1 := startModelInferAt(t, late, []string{"a", "b"}, nil)
	h.routes.update([]string{w0.socket, late})
	if code, body := inferModel(h, "b"); code != fasthttp.StatusOK || w1.count("b") != 1 {
		t.Fatalf("b once the late worker answers: %d %s (it ran %d), want 200 from it", code, body, w1.count("b"))
	}
}

// TestSwappingEveryWorkerAtOnceDropsNothing: the master's list can go from
// one set of infer workers straight to another (a PUT that missed the
// surge step, a restart): requests under load keep finding a worker that
// serves their model at every moment of the swap, with neither the new
// routes nor the lb's backends published first.
func TestSwappingEveryWorkerAtOnceDropsNothing(t *testing.T) {
	models := []string{"b"}
	w1 := startModelInfer(t, models, nil)
	w2 := startModelInfer(t, models, nil)
	h := routedHandler(t, w1.socket)

	const clients = 4
	var failed, served atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code, body := inferModel(h, "b"); code != fasthttp.StatusOK {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", code, body))
				} else {
					served.Add(1)
				}
			}
		}()
	}
	for i := range 400 {
		if i%2 == 0 {
			h.routes.update([]string{w2.socket})
		} else {
			h.routes.update([]string{w1.socket})
		}
	}
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d requests for b failed while every worker was swapped at once; first: %v", n, n+served.Load(), firstFailure.Load())
	}
}

// TestRefetchReadsAKeptWorkersModelsAgain: a worker's models are read once,
// when its socket appears; a PUT naming it in refetch (its models changed
// in place by a reload) reads them again, so a model it added serves and
// one it retired does not, on the same socket.
func TestRefetchReadsAKeptWorkersModelsAgain(t *testing.T) {
	var meta atomic.Value
	setModels := func(names ...string) {
		var sts []worker.ModelStatus
		for _, n := range names {
			sts = append(sts, worker.ModelStatus{Metadata: testMetadata(n)})
		}
		b, err := json.Marshal(sts)
		if err != nil {
			t.Fatal(err)
		}
		meta.Store(b)
	}
	setModels("a")
	socket := filepath.Join(t.TempDir(), "infer.sock")
	startFakeInferAt(t, socket, func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/metadata" {
			ctx.SetBody(meta.Load().([]byte))
			return
		}
		out := tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{1, 1}, Data: make([]byte, 4)}
		ctx.SetBody(tensor.AppendTensors(nil, []tensor.Tensor{out}))
	})
	h := routedHandler(t, socket)
	setModels("b")
	h.routes.update([]string{socket})
	if code, body := inferModel(h, "b"); code != fasthttp.StatusNotFound {
		t.Fatalf("b before a refetch: %d %s, want 404 (the worker's models as first read)", code, body)
	}
	h.routes.update([]string{socket}, socket)
	if code, body := inferModel(h, "b"); code != fasthttp.StatusOK {
		t.Errorf("b after the refetch: %d %s, want 200", code, body)
	}
	if code, body := inferModel(h, "a"); code != fasthttp.StatusServiceUnavailable {
		t.Errorf("a after the refetch: %d %s, want 503 (no worker has it now)", code, body)
	}
}
