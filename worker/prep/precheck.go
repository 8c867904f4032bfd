package prep

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// The master's prefix check (worker.PrefixHeader): before it reads the
// rest of a large body, the master sends its first bytes here, and this
// worker judges them with the rules it would apply to the whole request,
// in the decoders' prefix modes (v2.DecodeInferRequestPrefix,
// imageprep.InspectPrefix): 204 when nothing in the prefix is wrong, else
// the V2 error the whole request would get. The check is advisory: a
// prefix that ends before anything is known passes, and the whole request,
// if it comes, is judged again as ever. It decodes no tensor beyond the
// prefix, decodes no image (headers and JPEG markers only) and takes no
// arena slot, infer worker or decode gate, so it costs about a
// prefix-sized parse; it is not counted as a request of the model.

// precheck answers the master's prefix check of an infer request for m.
// A panic in the prefix decoders (newer than the whole-request paths) is
// logged and answered 500, which the master takes as no answer: the
// request goes on, and the worker keeps serving.
func (h *handler) precheck(ctx *fasthttp.RequestCtx, m *model) {
	defer func() {
		if p := recover(); p != nil {
			h.log.Error().Interface("panic", p).Str("stack", string(debug.Stack())).Msg("prefix check panicked; answered 500, the request goes on")
			writeError(ctx, fasthttp.StatusInternalServerError, "prefix check failed")
		}
	}()
	size, err := strconv.ParseInt(string(ctx.Request.Header.Peek(worker.PrefixHeader)), 10, 64)
	if err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, fmt.Sprintf("bad %s header %q from the master: want the body's length",
			worker.PrefixHeader, ctx.Request.Header.Peek(worker.PrefixHeader)))
		return
	}
	if enc := ctx.Request.Header.ContentEncoding(); len(enc) > 0 && string(enc) != "identity" {
		// Compressed: the prefix is not the request's first bytes. (A
		// decompressor that goes as far as the prefix does fits here.)
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	}
	if err := checkPrefix(ctx, m, size); err != nil && !errors.Is(err, v2.ErrTruncated) {
		writeV2Error(ctx, err)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// checkPrefix judges the request body's first bytes, of a body of size
// bytes (-1: unknown). nil or an error wrapping v2.ErrTruncated: go on.
func checkPrefix(ctx *fasthttp.RequestCtx, m *model, size int64) error {
	prefix := ctx.PostBody()
	switch {
	case m.image != nil && isImageBody(ctx):
		return m.image.CheckRawPrefix(prefix, size)
	case m.image != nil:
		return checkImageV2Prefix(ctx, m, size)
	case isImageBody(ctx):
		return notImageModel(ctx, m)
	}
	req, err := decodeV2Prefix(ctx, m.limits(), size)
	var tr *v2.Truncated
	switch {
	case err == nil:
		return req.Validate(&m.api)
	case errors.As(err, &tr):
		return tr.Request.ValidatePrefix(&m.api)
	}
	return err
}

// decodeV2Prefix is decodeV2 for the prefix of a body of size bytes.
func decodeV2Prefix(ctx *fasthttp.RequestCtx, lim v2.Limits, size int64) (*v2.InferRequest, error) {
	total := size
	if total < 0 {
		total = 1<<63 - 1
	}
	headerLen, err := binaryHeaderLen(ctx, total)
	if err != nil {
		return nil, err
	}
	return v2.DecodeInferRequestPrefix(ctx.PostBody(), size, headerLen, lim)
}
