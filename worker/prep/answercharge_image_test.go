package prep

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// postImages serves a V2 request of imgs to img on h and returns its
// context, user values open (its answer unread).
func postImages(h *handler, imgs ...[]byte) *fasthttp.RequestCtx {
	body, headerLen := binaryImages(imgs...)
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("/v2/models/img/infer")
	ctx.Request.Header.Set(headerLenHeader, headerLen)
	ctx.Request.SetBodyRaw(body)
	h.serve(ctx)
	return ctx
}

// TestImageChunksReserveTheirAnswers: an image model (batch 1) whose
// outputs are 1 MB an image (5 MB of JSON): with 8 MiB of its 16 MiB
// large lane held by another answer, a request of 8 images is refused
// 503 with Retry-After once its second image finds no room, before that
// image reaches the infer worker, and gives back the first one's room at
// once; once the lane is free, a request of 2 images is served, holds
// its room until written, and gives it back.
func TestImageChunksReserveTheirAnswers(t *testing.T) {
	const elems = 250_000 // FP32: 1 MB an image, 5 MB of JSON
	g := testGate(1, 1<<20, 1<<20+16<<20)
	h, inf := imageHandlerOut(t, g, nil, nil, tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{1, elems}, Data: make([]byte, 4*elems)})
	h.bodies = newBodyDecoder(0)
	h.bodies.gate = g
	m, _ := h.routes.model("img")
	m.image.MaxImages = 8
	const other = 8 << 20
	another, err := g.ReserveAnswer(other)
	if err != nil {
		t.Fatalf("the lane refused another answer's 8 MiB: %v", err)
	}
	img := encodePNG(t, 32, 32)
	imgs := make([][]byte, 8)
	for i := range imgs {
		imgs[i] = img
	}
	ctx := postImages(h, imgs...)
	defer ctx.ResetUserValues()
	if s := ctx.Response.StatusCode(); s != fasthttp.StatusServiceUnavailable || len(ctx.Response.Header.Peek(fasthttp.HeaderRetryAfter)) == 0 {
		t.Fatalf("8 images of 5 MB answers beside 8 MiB held in a 16 MiB lane: %d %.200q, want 503 with Retry-After", s, ctx.Response.Body())
	}
	if n := inf.hits.Load(); n != 1 {
		t.Errorf("the refused request sent %d images to the infer worker, want 1 (the second found no room)", n)
	}
	if s := g.State(); s.LargeBytes != other {
		t.Errorf("after the refusal the lane holds %d bytes, want the other answer's %d (the first image's room given back)", s.LargeBytes, other)
	}
	another.Release()
	ctx = postImages(h, img, img)
	if s := ctx.Response.StatusCode(); s != fasthttp.StatusOK {
		t.Fatalf("2 images in a free lane: %d %.200q, want 200", s, ctx.Response.Body())
	}
	if held := g.State().LargeBytes; held < 2*elems*(4+16) {
		t.Errorf("an unread answer of 2 images holds %d bytes of the lane, want at least their outputs and JSON (%d)", held, 2*elems*(4+16))
	}
	ctx.ResetUserValues() // as fasthttp does once the answer is written
	waitState(t, g, decodegate.State{})
}
