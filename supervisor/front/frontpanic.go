package front

import (
	"runtime/debug"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/admission"
)

// fasthttp does not recover panics: one in the header hook or the handler
// would take the master, and every worker with it, down. The lb recovers
// its own; these cover the master's code around it (admission, body
// reading, local routes).

// recoverHeader turns a panic in the header hook into a refusal the
// handler answers with 500; v is the hook's verdict.
func (f *Front) recoverHeader(h *fasthttp.RequestHeader, v **verdict) {
	r := recover()
	if r == nil {
		return
	}
	f.log.Error().Interface("panic", r).Str("stack", string(debug.Stack())).
		Msg("front: recovered panic while deciding a request from its header; answered 500 and kept serving")
	refused := &verdict{hasBody: true, Refusal: admission.Refusal{Status: fasthttp.StatusInternalServerError, Msg: "internal error in the master"}}
	// finish is idempotent: the verdict may be both *v and the one in
	// admissions.
	if old := f.admissions.put(h, refused); old != nil {
		f.finish(old)
	}
	if *v != nil {
		f.finish(*v)
	}
	*v = refused
	h.SetContentLength(0)
	h.Del(fasthttp.HeaderExpect)
}

// recoverHandler answers 500 for a panic in the handler and closes the
// connection (what was read of the request is unknown).
func (f *Front) recoverHandler(ctx *fasthttp.RequestCtx) {
	r := recover()
	if r == nil {
		return
	}
	f.log.Error().Interface("panic", r).Str("stack", string(debug.Stack())).
		Msg("front: recovered panic while serving a request; answered 500 and kept serving")
	ctx.Response.Reset()
	f.refuse(ctx, admission.Refusal{Status: fasthttp.StatusInternalServerError, Msg: "internal error in the master"}, true)
}
