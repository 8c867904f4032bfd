package prep

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// checkRawPrefix judges the first bytes of a raw image body of size bytes
// (-1: unknown): the image's header as far as it is present.
func (im *imageInput) checkRawPrefix(prefix []byte, size int64) error {
	if err := im.checkCount(1); err != nil {
		return err
	}
	return im.checkPrefixImages(nil, prefix, max(size, int64(len(prefix))))
}

// checkV2Prefix judges the first bytes of a V2 request to an image model:
// the request's structure and its one BYTES input as the full path
// (imageRequest) does, the image count from the input's shape, and the
// images present: whole ones as Inspect does, the one the prefix cuts as
// far as it goes.
func (im *imageInput) checkV2Prefix(ctx *fasthttp.RequestCtx, m *model, size int64) error {
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
	if err := im.checkCount(req.Inputs[0].Shape[0]); err != nil || tr.Open == nil {
		return err
	}
	whole := make([][]byte, len(tr.Open.Elements))
	for i, e := range tr.Open.Elements {
		if whole[i], err = unbase64(e); err != nil {
			return &v2.Error{Status: fasthttp.StatusBadRequest,
				Msg: fmt.Sprintf("input %q: image %d is neither JPEG nor PNG bytes nor valid base64 of them: %v", im.spec.Name, i, err)}
		}
	}
	return im.checkPrefixImages(whole, unbase64Prefix(tr.Open.Tail), -1)
}

// checkPrefixImages inspects the whole images (as tensors does, request
// pixels included), then the start of the next one, cut, adding its
// pixels once its header is present. cutSize is the cut image's whole
// length for messages (-1: unknown).
func (im *imageInput) checkPrefixImages(whole [][]byte, cut []byte, cutSize int64) error {
	if _, err := im.inspect(whole); err != nil {
		return err
	}
	var total int64
	for _, img := range whole {
		h, _ := im.cfg.Inspect(img) // passed just above
		total += h.Pixels()
	}
	i, n := len(whole), len(whole)+1
	h, err := im.cfg.InspectPrefix(cut)
	if err != nil {
		if !isImageError(err) {
			return nil
		}
		what := fmt.Sprintf("at least %d bytes", len(cut))
		if cutSize >= 0 {
			what = fmt.Sprintf("%d bytes", cutSize)
		}
		return &imageError{fmt.Sprintf("input %q: image %d of %d (%s): %v", im.spec.Name, i, n, what, err)}
	}
	if h.DecodeBytes > 0 {
		if err := im.gate.Check(h.DecodeBytes); err != nil {
			return &imageError{fmt.Sprintf("input %q: image %d (%s %d×%d): %v", im.spec.Name, i, h.Format, h.Width, h.Height, err)}
		}
	}
	if total += h.Pixels(); total > im.maxRequestPixels {
		return &imageError{fmt.Sprintf("input %q: image %d (%s %d×%d) brings the request to %d pixels, over this model's max_request_pixels (%d); send fewer or smaller images",
			im.spec.Name, i, h.Format, h.Width, h.Height, total, im.maxRequestPixels)}
	}
	return nil
}

// unbase64Prefix is unbase64 for the start of an element: base64 text is
// decoded as far as whole 4-character groups go; anything else is the
// element's own bytes.
func unbase64Prefix(e []byte) []byte {
	if !isBase64Text(e) {
		return e
	}
	n := len(e) / 4 * 4
	dec := make([]byte, base64.StdEncoding.DecodedLen(n))
	k, err := base64.StdEncoding.Decode(dec, e[:n])
	if err != nil {
		return nil // line breaks or padding inside: judged whole later
	}
	return dec[:k]
}
