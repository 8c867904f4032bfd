package prep

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker/prep/answercost"
	"github.com/supervisor-dev/supervisor/worker/prep/imageinput"
)

// isImageBody reports whether the request body is one raw image
// (Content-Type image/jpeg, image/png, ...): the form for curl users.
func isImageBody(ctx *fasthttp.RequestCtx) bool {
	return bytes.HasPrefix(bytes.ToLower(ctx.Request.Header.ContentType()), []byte("image/"))
}

// inferImages serves an image model: the images, as a raw body or a V2
// BYTES input, become the model's input tensor, run on an infer worker one
// chunk at a time (see imageinput.Input's chunk), and the outputs of the chunks
// are concatenated along the batch dimension. Before each chunk is run,
// the request's answer room grows by the outputs the chunk will bring
// (answercost.Chunks), so that the outputs of earlier chunks are never held
// uncharged; a chunk that finds no room refuses the request (503). The
// response cache is
// asked before any image is decoded (lookupImages), so a hit costs no
// decoding.
func (h *handler) inferImages(ctx *fasthttp.RequestCtx, m *model) {
	pt := h.traceOf(ctx) // trace.go
	t0 := pt.now()
	req, images, err := imageRequest(ctx, m, h.board)
	pt.stage("prep.parse", t0)
	if err != nil {
		writeV2Error(ctx, err)
		return
	}
	// The count first: a request refused for it must not be hashed for
	// the cache lookup, nor counted as a miss.
	if err := m.image.CheckCount(int64(len(images))); err != nil {
		writeError(ctx, fasthttp.StatusBadRequest, err.Error())
		return
	}
	t0 = pt.now()
	key, hit := h.lookupImages(ctx, m, req, images)
	pt.cache(t0, hit)
	if hit {
		return
	}
	t0 = pt.now()
	inputs, err := m.image.Tensors(images, stopperFor(ctx, h.board))
	pt.decode(t0, len(images))
	if err != nil {
		var ie *imageinput.Error
		var se *imageinput.StoppedError
		switch {
		case errors.As(err, &ie):
			writeError(ctx, fasthttp.StatusBadRequest, ie.Error())
			return
		case errors.As(err, &se):
			h.log.Info().Int("decoded", se.Decoded).Int("images", se.Total).Err(se.Reason).Msg("image request abandoned by its client")
			writeError(ctx, fasthttp.StatusGatewayTimeout, se.Error())
			return
		}
		writeError(ctx, fasthttp.StatusInternalServerError, "preprocessing failed: "+err.Error())
		return
	}
	var outs []tensor.Tensor
	var model string // the chunks' model identity; "" when they differ
	for i, in := range inputs {
		sub := *req
		sub.Inputs = []tensor.Tensor{in}
		if !h.reserveAnswer(ctx, answercost.Chunks(m.md.Outputs, &sub, i+1)) { // before this chunk's infer
			refuseAnswer(ctx)
			return
		}
		o, id, status, err := h.forward(ctx, m, &sub)
		if err != nil {
			writeError(ctx, status, err.Error())
			return
		}
		if i == 0 {
			model = id
		} else if id != model {
			model = "" // two models answered: cache nothing
		}
		if outs, err = concatBatch(outs, o); err != nil {
			writeError(ctx, fasthttp.StatusInternalServerError, err.Error())
			return
		}
	}
	h.respond(ctx, m, req, outs, key, model)
}

// imageRequest reads the images a request carries. A raw body is one
// image, answered with every output (the configured top_k classes in place
// of the classified output's scores). A V2 request must have the model's
// one input as BYTES of shape [n] or [n,1]; its elements are the encoded
// images, raw or base64 (JSON strings cannot carry raw bytes).
func imageRequest(ctx *fasthttp.RequestCtx, m *model, slot *shm.Slot) (*v2.InferRequest, [][]byte, error) {
	if isImageBody(ctx) {
		req := &v2.InferRequest{}
		if c := m.classify; c != nil && c.topK > 0 {
			req.Outputs = []v2.RequestedOutput{{Name: c.output, Classification: c.topK}}
			for _, o := range m.md.Outputs {
				if o.Name != c.output {
					req.Outputs = append(req.Outputs, v2.RequestedOutput{Name: o.Name})
				}
			}
		}
		return req, [][]byte{ctx.PostBody()}, nil
	}
	req, err := decodeV2(ctx, m.limits(), slot)
	if err != nil {
		return nil, nil, err
	}
	for i := range req.Inputs {
		if t := &req.Inputs[i]; t.DType == tensor.Bytes && len(t.Shape) == 2 && t.Shape[1] == 1 {
			t.Shape = t.Shape[:1] // Triton clients often send [n,1]
		}
	}
	if err := req.Validate(&m.api); err != nil {
		return nil, nil, err
	}
	in := &req.Inputs[0]
	images, err := tensor.BytesElements(in.Data, in.Shape[0])
	if err != nil { // Validate's Check makes this unreachable
		return nil, nil, &v2.Error{Status: fasthttp.StatusBadRequest, Msg: fmt.Sprintf("input %q: %v", in.Name, err)}
	}
	for i, img := range images {
		if images[i], err = imageinput.Unbase64(img); err != nil {
			return nil, nil, &v2.Error{Status: fasthttp.StatusBadRequest,
				Msg: fmt.Sprintf("input %q: image %d is neither JPEG nor PNG bytes nor valid base64 of them: %v", in.Name, i, err)}
		}
	}
	return req, images, nil
}

// concatBatch appends the outputs of one more chunk to acc along the
// first (batch) dimension.
func concatBatch(acc, next []tensor.Tensor) ([]tensor.Tensor, error) {
	if acc == nil {
		return next, nil
	}
	if len(acc) != len(next) {
		return nil, fmt.Errorf("the infer worker returned %d outputs for one chunk of images and %d for another", len(acc), len(next))
	}
	for i := range acc {
		a, b := &acc[i], &next[i]
		if a.Name != b.Name || a.DType != b.DType || len(a.Shape) == 0 || len(a.Shape) != len(b.Shape) {
			return nil, fmt.Errorf("output %q: chunks of images gave outputs that do not stack along a batch dimension", a.Name)
		}
		a.Data = append(a.Data, b.Data...)
		a.Shape[0] += b.Shape[0]
	}
	return acc, nil
}
