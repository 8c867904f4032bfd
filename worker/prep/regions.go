package prep

import (
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
)

// outRefsKey is where splice leaves a request's output references
// (ctx's user values) for deliver.
const outRefsKey = "sysshm.outputs"

// splice reads the inputs of a request that the master sent by
// reference (sysshm.RefsHeader: an infer request whose inputs or
// outputs are in system shared memory regions) into its body, from the
// regions themselves (sysshm.Reader), so that every later reader (the
// decode, the response cache's key, the arena) sees a whole binary
// request, as if the client had sent the bytes; its outputs' references
// are kept for deliver. The bytes are charged to the
// decompressed bodies' lane, as a decompression's are: they are a body
// this worker holds beyond the bytes it was sent. release gives them
// back once the request is done. On failure it answers the request
// (400 for a region that changed under the server, 413, 503) and ok is
// false; the worker lives on whatever the client does to its object.
func (d *bodyDecoder) splice(ctx *fasthttp.RequestCtx, raw []byte) (release func(), ok bool) {
	refs, err := sysshm.ParseRefs(string(raw))
	if err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, "the master's shared memory references: "+err.Error())
		return nil, false
	}
	if d.regions == nil {
		writeError(ctx, fasthttp.StatusInternalServerError, "this prep worker was given no shared memory descriptor socket (worker.Spec.RegionsFD); it cannot read the request's regions")
		return nil, false
	}
	ctx.Request.Header.Del(sysshm.RefsHeader)
	ctx.SetUserValue(outRefsKey, refs)
	if !sysshm.HasInputs(refs) {
		return func() {}, true
	}
	body := ctx.PostBody()
	hlen, err := binaryHeaderLen(ctx, int64(len(body)))
	if err != nil {
		writeV2Error(ctx, err)
		return nil, false
	}
	n, err := sysshm.SplicedLen(len(body), refs, d.limit)
	if err != nil {
		writeError(ctx, sysshm.StatusOf(err), err.Error())
		return nil, false
	}
	charge := d.charge()
	if err := charge.Grow(int64(n)); err != nil {
		charge.Release()
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable,
			"server busy: request bodies in flight fill this prep worker's budget; retry later")
		return nil, false
	}
	out, err := sysshm.Splice(body, hlen, refs, d.limit, d.regions.Read)
	if err != nil {
		charge.Release()
		writeError(ctx, sysshm.StatusOf(err), fmt.Sprint(err))
		return nil, false
	}
	ctx.Request.SetBodyRaw(out)
	return charge.Release, true
}

// deliver writes a request's outputs in regions (splice kept their
// references) from its 200 answer into the regions, with the worker's
// descriptors (sysshm.Deliver, Reader.Write), and leaves the answer
// with those outputs' entries naming their region instead of carrying
// bytes: the master has nothing to copy. A cached answer is delivered
// the same way. On failure the answer is the error (400 for a region
// that changed under the server, or an output larger than its room).
func (h *handler) deliver(ctx *fasthttp.RequestCtx) {
	refs, _ := ctx.UserValue(outRefsKey).([]sysshm.Ref)
	if len(refs) == 0 || ctx.Response.StatusCode() != fasthttp.StatusOK {
		return
	}
	n := -1 // no binary part: Deliver says the outputs are missing
	if hl := ctx.Response.Header.Peek(headerLenHeader); hl != nil {
		if v, err := strconv.Atoi(string(hl)); err == nil {
			n = v
		}
	}
	out, m, err := sysshm.Deliver(ctx.Response.Body(), n, refs, h.bodies.regions.Write)
	if err != nil {
		ctx.Response.Header.Del(headerLenHeader)
		writeError(ctx, sysshm.StatusOf(err), err.Error())
		return
	}
	ctx.Response.Header.Set(headerLenHeader, strconv.Itoa(m))
	ctx.Response.SetBodyRaw(out)
}
