package prep

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/modelcache"
)

// imageHandler is a prep handler serving "img", an image model (224×224
// FP32 NCHW, batch 1), through gate, forwarding to a fake infer worker
// that answers every request with y = [[0]].
func imageHandler(t *testing.T, gate *decodegate.Gate) *handler {
	t.Helper()
	h, _ := cachedImageHandler(t, gate, nil, nil)
	return h
}

// testModelID is the model identity the fake infer workers answer with.
const testModelID = "sha256:test"

// cachedImageHandler is imageHandler with a response cache (nil: none),
// and its fake infer worker, which exits mid-request (closes its
// connection without answering) while exits is set (nil: never).
func cachedImageHandler(t *testing.T, gate *decodegate.Gate, cache *modelcache.Cache, exits *atomic.Bool) (*handler, *fakeInfer) {
	t.Helper()
	return imageHandlerOut(t, gate, cache, exits, tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{1, 1}, Data: make([]byte, 4)})
}

// imageHandlerOut is cachedImageHandler whose model declares, and whose
// fake infer worker answers every request with, out.
func imageHandlerOut(t *testing.T, gate *decodegate.Gate, cache *modelcache.Cache, exits *atomic.Bool, out tensor.Tensor) (*handler, *fakeInfer) {
	t.Helper()
	reply := tensor.AppendTensors(nil, []tensor.Tensor{out})
	return imageHandlerBy(t, gate, cache, out, func(ctx *fasthttp.RequestCtx) {
		if exits != nil && exits.Load() {
			ctx.HijackSetNoResponse(true)
			ctx.Hijack(func(c net.Conn) { c.Close() })
			return
		}
		ctx.Response.Header.Set(worker.ModelIDHeader, testModelID)
		ctx.SetBody(reply)
	})
}

// imageHandlerBy is imageHandlerOut whose fake infer worker answers with
// behave; its model declares the output out.
func imageHandlerBy(t *testing.T, gate *decodegate.Gate, cache *modelcache.Cache, out tensor.Tensor, behave fasthttp.RequestHandler) (*handler, *fakeInfer) {
	t.Helper()
	inf := startFakeInfer(t, behave)
	up := lb.New(lb.Options{Timeout: time.Minute, Logger: zerolog.Nop()})
	procs := []worker.Processing{{Model: "img", Image: &worker.ImageInput{MaxPixels: 40_000_000}}}
	r := newRouter(up, procs, nil, zerolog.Nop())
	r.gate = gate
	if cache != nil {
		r.caches = map[string]*modelcache.Cache{"img": cache}
	}
	r.fetch = func(string, time.Duration) ([]worker.ModelStatus, error) {
		return []worker.ModelStatus{{Metadata: tensor.Metadata{Name: "img", Platform: "onnxruntime_onnx",
			Inputs:  []tensor.Spec{{Name: "x", DType: tensor.FP32, Shape: []int64{1, 3, 224, 224}}},
			Outputs: []tensor.Spec{{Name: out.Name, DType: out.DType, Shape: out.Shape}}}}}, nil
	}
	r.update([]string{inf.socket})
	if m, ok := r.model("img"); !ok || m.image == nil {
		t.Fatal("the image model is not served")
	}
	return &handler{routes: r, up: up, timeout: time.Minute, log: zerolog.Nop()}, inf
}

// postImage sends one raw PNG body to img in a goroutine; the channel
// gets the status and body.
func postImage(h *handler, img []byte) <-chan [2]string {
	return postInfer(h, img, map[string]string{"Content-Type": "image/png"})
}

// postInfer sends body, with these request headers, to img's infer route
// in a goroutine; the channel gets the status and body.
func postInfer(h *handler, body []byte, header map[string]string) <-chan [2]string {
	done := make(chan [2]string, 1)
	go func() {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetRequestURI("/v2/models/img/infer")
		for k, v := range header {
			ctx.Request.Header.Set(k, v)
		}
		ctx.Request.SetBody(body)
		h.serve(&ctx)
		done <- [2]string{fasthttp.StatusMessage(ctx.Response.StatusCode()), string(ctx.Response.Body())}
	}()
	return done
}

// answered waits (bounded) for a postImage and checks its status.
func answered(t *testing.T, done <-chan [2]string, status int, what string) string {
	t.Helper()
	select {
	case r := <-done:
		if r[0] != fasthttp.StatusMessage(status) {
			t.Fatalf("%s: %s %s, want %d", what, r[0], r[1], status)
		}
		return r[1]
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no answer", what)
	}
	return ""
}

// TestSmallImageOvertakesLargeOnes, through a prep handler decoding real
// PNGs: while the large lane is full (a decode of its whole share in
// flight, held by the test) and two 36-megapixel PNGs wait for it, a
// small image is decoded and answered; an image that could never fit the
// budget is refused (400, naming prep.max_decode_bytes) without queuing;
// and the queued ones are answered once the lane frees.
func TestSmallImageOvertakesLargeOnes(t *testing.T) {
	g := testGate(1, 16<<20, 16<<20+200<<20) // large lane: 200 MiB
	h := imageHandler(t, g)
	full := mustEnter(t, g, g.Largest())
	bomb := hostile.PNGBomb8(6000, 6000) // 144 MB decoded
	large := []<-chan [2]string{postImage(h, bomb), postImage(h, bomb)}
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: g.Largest(), LargeWaiting: 2})

	answered(t, postImage(h, encodePNG(t, 640, 480)), fasthttp.StatusOK, "a small image behind two large ones")
	tall := answered(t, postImage(h, hostile.PNGBomb8(1, 1_000_000)), fasthttp.StatusBadRequest, "a 1×1,000,000 PNG")
	if !strings.Contains(tall, "prep.max_decode_bytes") || !strings.Contains(tall, "PNG 1×1000000") {
		t.Errorf("the refusal of an image over the budget says %s", tall)
	}
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: g.Largest(), LargeWaiting: 2})

	full.Release()
	for i, done := range large {
		answered(t, done, fasthttp.StatusOK, "queued large image "+string(rune('0'+i)))
	}
	waitState(t, g, decodegate.State{})
}
