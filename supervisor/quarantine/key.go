package quarantine

import (
	"errors"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// headerLenHeader is the binary tensor extension's header: the length of
// the body's JSON part.
const headerLenHeader = "Inference-Header-Content-Length"

// Key is the quarantine key of the request in ctx: what reaches
// the model, not the bytes as sent nor how it was asked (guard.go). The
// body is decompressed (Content-Encoding), then decoded as a V2 infer
// request; the key is v2.WriteRequestKey's: the served name of the
// version it goes to (whatever form the route takes: /versions/{v}, or
// none for the highest ready version; Options.ServedName) and each
// input's name, datatype, shape and tensor bytes. Not the requested
// outputs nor their parameters: the same tensors crash the model whatever
// output is asked for, so a quarantined body resent with another output
// or classification, or to the same version by another route, is refused
// as it was, while another version of the model is still sent it (the
// response cache adds the outputs to the same key, worker/prep/modelcache,
// for there they change the answer). A body that does not decode that
// way (an image body, a malformed or oversized one) is keyed by the model
// and its decompressed bytes (poison.Quarantine.KeyOf), or its bytes as
// sent when it cannot be decompressed within max_body_bytes and the body
// budget. A body whose decode does not fit in the body budget (see
// decodeCost) is keyed by its decompressed bytes too. Every key starts
// with the content identity of the model's file (Options.ModelIdentity),
// so that a quarantine ends with the weights it was struck on: reloaded
// from other bytes, the model is sent the body again.
func (g *Guard) Key(ctx *fasthttp.RequestCtx) poison.Key {
	k, _ := g.decodedKey(ctx)
	return k
}

// decodedKey is Key and the size of the body it decoded (after
// decompression), which abandonKey charges to its rate.
func (g *Guard) decodedKey(ctx *fasthttp.RequestCtx) (poison.Key, int) {
	body, release := g.inflated(ctx)
	defer release()
	model := g.keyModel(ctx)
	id := g.modelIdentity(model)
	req, err := g.decodeCharged(body, headerLen(&ctx.Request.Header, len(body)))
	if err != nil {
		return g.q.KeyOf(model, id, body), len(body)
	}
	h := g.q.NewHasher(id)
	v2.WriteRequestKey(h, model, req.Inputs)
	return h.Sum(), len(body)
}

// sentKey is the key of ctx's body as sent, undecoded: abandonKey's
// fallback past its rate, which screen checks as well.
func (g *Guard) sentKey(ctx *fasthttp.RequestCtx) poison.Key {
	model := g.keyModel(ctx)
	return g.q.KeyOf(model, g.modelIdentity(model), ctx.Request.Body())
}

// modelIdentity is Options.ModelIdentity's answer for model, "" without it.
func (g *Guard) modelIdentity(model string) string {
	if g.o.ModelIdentity == nil {
		return ""
	}
	return g.o.ModelIdentity(model)
}

// keyModel is the model ctx's route names, the model part of its keys:
// an inference route's path takes more than one form
// (/v2/models/{m}/infer, /v2/models/{m}/versions/{v}/infer), and a key
// of the path would let a client dodge a quarantine by its spelling.
// The front routes only paths ParseRoute reads; another path keys as is.
// The model is the version served (Options.ServedName): a body that
// crashes version 2 is not refused to version 1, and /versions/{v} and
// the unversioned route that resolves to v key alike.
func (g *Guard) keyModel(ctx *fasthttp.RequestCtx) string {
	path := string(ctx.Path())
	if r, ok := v2.ParseRoute(path); ok {
		if g.o.ServedName != nil && r.Model != "" {
			return g.o.ServedName(r)
		}
		return r.Model
	}
	return path
}

// abandonKey is the key to remember an abandoned request by at now: its
// Key while the bytes decoded for abandoned requests stay within
// limits.poison_key_rate (keyRate, charged the body as sent before, and
// what it inflated to beyond that after), its sentKey past it (guard.go
// says why not nothing), counted in fallbackKeys.
func (g *Guard) abandonKey(ctx *fasthttp.RequestCtx, now time.Time) poison.Key {
	sent := len(ctx.Request.Body())
	c := g.o.Config()
	if !g.abandonKeys.take(int64(sent), int64(c.MaxBodyBytes), int64(c.Limits.PoisonKeyRate), now) {
		g.fallbackKeys.Add(1)
		return g.sentKey(ctx)
	}
	k, decoded := g.decodedKey(ctx)
	g.abandonKeys.owe(int64(decoded - sent))
	return k
}

// decodeCost bounds the tensor bytes a V2 decode allocates per byte of
// the request's JSON part: a value takes two bytes there ("0,") and up
// to eight decoded (INT64, FP64; internal/v2 data.go checks the count
// before allocating), while binary tensors alias the body. A 64 MiB JSON
// body of zeros decodes to 256 MiB: on the master, unlike the body, that
// would be charged to nothing.
const decodeCost = 4

// errDecodeNoRoom keeps a request whose decode does not fit in the body
// budget from being decoded.
var errDecodeNoRoom = errors.New("no room in limits.max_body_bytes_in_flight to decode the request for its poison key")

// decodeCharged decodes body as a V2 infer request, its decode's memory
// (decodeCost per byte of its JSON part) charged to the body budget
// meanwhile; errDecodeNoRoom when that does not fit.
func (g *Guard) decodeCharged(body []byte, headerLen int) (*v2.InferRequest, error) {
	json := len(body)
	if headerLen >= 0 && headerLen < json {
		json = headerLen
	}
	n := int64(decodeCost) * int64(json)
	charge, err := g.o.Budget().Reserve(n, n)
	if err != nil {
		return nil, errDecodeNoRoom
	}
	defer charge.Release()
	return v2.DecodeInferRequest(body, headerLen)
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

// inflated is ctx's body decompressed per its Content-Encoding (or
// spliced: Options.Spliced), charged
// to the body budget until release; the body as sent when it is not
// compressed or does not decompress within max_body_bytes and the budget.
func (g *Guard) inflated(ctx *fasthttp.RequestCtx) (body []byte, release func()) {
	if g.o.Spliced != nil {
		if b, ok := g.o.Spliced(ctx); ok {
			return b, func() {} // charged as the request's body (front sharedmemory.go)
		}
	}
	sent := ctx.Request.Body()
	c, err := httpcoding.ParseContentEncoding(ctx.Request.Header.Peek(fasthttp.HeaderContentEncoding))
	if err != nil || c == httpcoding.Identity {
		return sent, func() {}
	}
	limit := int64(g.o.Config().MaxBodyBytes)
	charge, err := g.o.Budget().Reserve(0, limit) // in the lane of the largest body it may become
	if err != nil {
		return sent, func() {}
	}
	out, err := httpcoding.Decompress(c, sent, int(limit), charge)
	if err != nil {
		charge.Release()
		return sent, func() {}
	}
	return out, charge.Release
}
