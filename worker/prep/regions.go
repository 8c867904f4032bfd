package prep

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
)

// splice reads the inputs of a request that the master sent by
// reference (sysshm.RefsHeader: an infer request whose inputs are in
// system shared memory regions) into its body, from the regions
// themselves (sysshm.Reader), so that every later reader (the decode,
// the response cache's key, the arena) sees a whole binary request, as
// if the client had sent the bytes. The bytes are charged to the
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
	ctx.Request.Header.Del(sysshm.RefsHeader)
	return charge.Release, true
}
