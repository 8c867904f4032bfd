package front

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
)

// Triton's system shared memory extension (supervisor/sysshm) is the
// master's: the routes under sysshm.Prefix are answered here, under the
// same header-time admission as every route (the API key first, a place
// under max_in_flight, the body budget), and an infer request that
// names regions is rewritten before the lb sees it (sysshm.Inline: its
// inputs' and outputs' bytes stay in their regions, named by
// sysshm.RefsHeader for the prep worker to read and write). The gRPC SystemSharedMemory* RPCs
// are these routes (grpcfront).

const inferenceHeaderLength = "Inference-Header-Content-Length"

// shmLimits are the per-key bounds of c.
func shmLimits(c *config.Config) sysshm.Limits {
	return sysshm.Limits{Regions: c.Limits.SharedMemoryRegions, Bytes: int64(c.Limits.SharedMemoryBytes)}
}

// decideSharedMemory admits a request under sysshm.Prefix once decide has
// checked its API key: 404 for no route, 405 for the wrong method, 413
// for a body over sysshm.MaxBody.
func (f *Front) decideSharedMemory(h *fasthttp.RequestHeader, path string, v *verdict) *verdict {
	_, _, method, ok := sysshm.ParseRoute(path)
	if !ok {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusNotFound, Msg: fmt.Sprintf("no route for %q (the system shared memory routes are %s)", path, sysshm.Routes)}
		return v
	}
	if got := string(h.Method()); got != method && (method != fasthttp.MethodGet || got != fasthttp.MethodHead) {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusMethodNotAllowed, Header: fasthttp.HeaderAllow, Value: method,
			Msg: fmt.Sprintf("method %s is not allowed on %q; use %s", got, path, method)}
		return v
	}
	v.Refusal = f.holdMasterBody(v, "the system shared memory routes", sysshm.MaxBody)
	return v
}

// serveSharedMemory answers a route admitted by decideSharedMemory.
func (f *Front) serveSharedMemory(ctx *fasthttp.RequestCtx) {
	body, ok := f.readMasterBody(ctx)
	if !ok {
		return
	}
	op, name, _, _ := sysshm.ParseRoute(string(ctx.Path()))
	status, answer := f.shm.Serve(f.adm.Owner(&ctx.Request.Header), op, name, body, shmLimits(f.cfg()))
	ctx.SetStatusCode(status)
	if len(answer) > 0 {
		ctx.SetContentType("application/json")
		ctx.SetBody(answer)
	}
}

// forwardInfer forwards an admitted request (forward), first rewriting
// one whose inputs or outputs are in regions (inlineRegions: the prep
// worker reads and writes their bytes). Only an infer request whose JSON
// names a region (sysshm.Mentions) is touched; a compressed body is not
// read here (the prep worker refuses the parameters in it).
func (f *Front) forwardInfer(ctx *fasthttp.RequestCtx, c *config.Config, v *verdict, client lb.Client, gate lb.AnswerGate) {
	// A request sent with the binary extension (every gRPC one) is
	// answered with it even when no output is left in the binary part.
	binaryAsked := ctx.Request.Header.Peek(inferenceHeaderLength) != nil
	p, ok := f.inlineRegions(ctx, c, v)
	if !ok {
		return
	}
	defer p.Release() // once answered: the prep worker is done with them
	f.forward(ctx, c, v.model, v.deadline, client, gate)
	if p == nil || ctx.Response.StatusCode() != fasthttp.StatusOK || binaryAsked {
		return
	}
	// Every output in a region: the answer is its JSON alone, as the
	// client, who sent JSON, expects it.
	if h := ctx.Response.Header.Peek(inferenceHeaderLength); h != nil && string(h) == strconv.Itoa(len(ctx.Response.Body())) {
		ctx.Response.Header.Del(inferenceHeaderLength)
		ctx.SetContentType("application/json")
	}
}

// pendingKey is where inlineRegions leaves a request's *sysshm.Pending
// (ctx's user values), for the poison quarantine's key (spliced).
const pendingKey = "sysshm.pending"

// spliced is the body ctx's request stands for, its inputs in regions
// read into it (sysshm.Pending.Splice), for the poison quarantine's
// key (quarantine.Options.Spliced); ok is false for a request that
// names no region, or whose regions cannot be read.
func (f *Front) spliced(ctx *fasthttp.RequestCtx) ([]byte, bool) {
	p, _ := ctx.UserValue(pendingKey).(*sysshm.Pending)
	if len(p.Refs()) == 0 {
		return nil, false
	}
	hlen, err := strconv.Atoi(string(ctx.Request.Header.Peek(inferenceHeaderLength)))
	if err != nil {
		return nil, false
	}
	b, err := p.Splice(ctx.Request.Body(), hlen, int(f.cfg().MaxBodyBytes))
	return b, err == nil
}

// inlineRegions rewrites an infer request that names regions
// (sysshm.Inline): its inputs and outputs in regions are sent as
// references (sysshm.RefsHeader), read and written by the prep worker,
// and the inputs' bytes are
// charged to the body budget as a body's are: the request still makes
// the server hold them, in the prep worker now. !ok: refused, answered.
func (f *Front) inlineRegions(ctx *fasthttp.RequestCtx, c *config.Config, v *verdict) (p *sysshm.Pending, ok bool) {
	req := &ctx.Request
	if !strings.HasSuffix(string(ctx.Path()), "/infer") || len(req.Header.ContentEncoding()) > 0 {
		return nil, true
	}
	body := req.Body()
	hlen := -1
	header := body
	if h := req.Header.Peek(inferenceHeaderLength); h != nil {
		n, err := strconv.Atoi(string(h))
		if err != nil || n < 0 || n > len(body) {
			return nil, true // the prep worker answers it
		}
		hlen, header = n, body[:n]
	}
	if !sysshm.Mentions(header) {
		return nil, true
	}
	out, n, p, err := f.shm.Inline(f.adm.Owner(&req.Header), body, hlen, int(c.MaxBodyBytes))
	if err != nil {
		f.reply(ctx, sysshm.StatusOf(err), err.Error())
		return nil, false
	}
	full, err := sysshm.SplicedLen(len(out), p.Refs(), int(c.MaxBodyBytes))
	if err != nil {
		p.Release()
		f.reply(ctx, sysshm.StatusOf(err), err.Error())
		return nil, false
	}
	if full > len(body) {
		// The region's bytes are charged as the body's would have been
		// (admission.go's chargeChunked: its first MiB small, the rest large).
		if err := f.chargeChunked(v, int64(full)); err != nil {
			p.Release()
			ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
			f.reply(ctx, fasthttp.StatusServiceUnavailable, "the server holds as many request bytes as limits.max_body_bytes_in_flight allows; retry")
			return nil, false
		}
	}
	req.SetBodyRaw(out)
	req.Header.SetContentLength(len(out))
	req.Header.Set(inferenceHeaderLength, strconv.Itoa(n))
	if refs := p.Refs(); len(refs) > 0 {
		req.Header.Set(sysshm.RefsHeader, sysshm.FormatRefs(refs))
		ctx.SetUserValue(pendingKey, p)
	}
	req.Header.SetContentType("application/octet-stream")
	// The answer is rewritten by the prep worker (sysshm.Deliver): it
	// must come uncompressed.
	req.Header.Del(fasthttp.HeaderAcceptEncoding)
	return p, true
}
