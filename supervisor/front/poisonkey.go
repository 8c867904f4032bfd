package front

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// headerLenHeader is the binary tensor extension's header: the length of
// the body's JSON part.
const headerLenHeader = "Inference-Header-Content-Length"

// poisonKey is the quarantine key of the request in ctx: what reaches
// the model, not the bytes as sent (poison.go). The body is decompressed
// (Content-Encoding), then decoded as a V2 infer request; the key hashes
// the route path, each input's name, datatype, shape and tensor bytes,
// and the requested outputs (the response cache's choice, worker/prep
// cache.go, less the model identity the path stands for). A body that
// does not decode that way (an image body, a malformed or oversized one)
// is keyed by its decompressed bytes, or by its bytes as sent when it
// cannot be decompressed within max_body_bytes and the body budget.
func (f *Front) poisonKey(ctx *fasthttp.RequestCtx) poison.Key {
	body, release := f.inflated(ctx)
	defer release()
	h := f.poison.NewHasher(ctx.Path())
	req, err := v2.DecodeInferRequest(body, headerLen(&ctx.Request.Header, len(body)))
	if err != nil {
		h.Bytes(body)
		return h.Sum()
	}
	v2.WriteInputsKey(h, req.Inputs)
	v2.WriteOutputsKey(h, req.Outputs)
	return h.Sum()
}

// headerLen is the Inference-Header-Content-Length of a body of size
// bytes, or -1 (all JSON) when absent; an unusable value is passed on
// for the decoder to refuse.
func headerLen(h *fasthttp.RequestHeader, size int) int {
	raw := h.Peek(headerLenHeader)
	if raw == nil {
		return -1
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 0 {
		return size + 1
	}
	return n
}

// inflated is ctx's body decompressed per its Content-Encoding, charged
// to the body budget until release; the body as sent when it is not
// compressed or does not decompress within max_body_bytes and the budget.
func (f *Front) inflated(ctx *fasthttp.RequestCtx) (body []byte, release func()) {
	sent := ctx.Request.Body()
	c, err := httpcoding.ParseContentEncoding(ctx.Request.Header.Peek(fasthttp.HeaderContentEncoding))
	if err != nil || c == httpcoding.Identity {
		return sent, func() {}
	}
	b := inflateBudget{f: f, limit: f.cfg().BodyBudgetLimit()}
	out, err := httpcoding.Decompress(c, sent, int(f.cfg().MaxBodyBytes), b)
	if err != nil {
		return sent, func() {}
	}
	return out, func() { b.Give(cap(out)) }
}

// inflateBudget lets httpcoding.Decompress charge the body budget.
type inflateBudget struct {
	f     *Front
	limit int64
}

func (b inflateBudget) Take(n int) bool { return b.f.budget.reserve(int64(n), int64(n), b.limit) }
func (b inflateBudget) Give(n int)      { b.f.budget.release(int64(n)) }
