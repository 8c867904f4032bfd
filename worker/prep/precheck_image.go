package prep

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker/prep/imageinput"
)

// checkImageV2Prefix judges the first bytes of a V2 request to an image model:
// the request's structure and its one BYTES input as the full path
// (imageRequest) does, the image count from the input's shape, and the
// images present: whole ones as Inspect does, the one the prefix cuts as
// far as it goes.
func checkImageV2Prefix(ctx *fasthttp.RequestCtx, m *model, size int64) error {
	im := m.image
	_, err := decodeV2Prefix(ctx, m.limits(), size)
	var tr *v2.Truncated
	if !errors.As(err, &tr) {
		return err // nil: the prefix holds the whole request, judged in full later
	}
	req := tr.Request
	if o := tr.Open; o != nil && (len(req.Inputs) == 0 || req.Inputs[len(req.Inputs)-1].Name != o.Name) {
		req.Inputs = append(req.Inputs, tensor.Tensor{Name: o.Name, DType: tensor.Bytes, Shape: o.Shape})
	}
	for i := range req.Inputs {
		if t := &req.Inputs[i]; t.DType == tensor.Bytes && len(t.Shape) == 2 && t.Shape[1] == 1 {
			t.Shape = t.Shape[:1] // as imageRequest: Triton clients often send [n,1]
		}
	}
	if err := req.ValidatePrefix(&m.api); err != nil || len(req.Inputs) == 0 {
		return err
	}
	if err := im.CheckCount(req.Inputs[0].Shape[0]); err != nil || tr.Open == nil {
		return err
	}
	whole := make([][]byte, len(tr.Open.Elements))
	for i, e := range tr.Open.Elements {
		if whole[i], err = imageinput.Unbase64(e); err != nil {
			return &v2.Error{Status: fasthttp.StatusBadRequest,
				Msg: fmt.Sprintf("input %q: image %d is neither JPEG nor PNG bytes nor valid base64 of them: %v", im.Name(), i, err)}
		}
	}
	return im.CheckPrefixImages(whole, imageinput.Unbase64Prefix(tr.Open.Tail), -1)
}
