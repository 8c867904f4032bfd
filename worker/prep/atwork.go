package prep

import (
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

// atWork records in the worker's scoreboard slot that it decodes ctx's
// request now (shm.Slot.Begin, under the master's token for it,
// worker.TokenHeader), until the returned Work's End: its body's
// decompression, its V2 decode, each of its images' decode. After a
// crash the master strikes the requests the worker was decoding, not the
// ones that wait (on the decode gate, on their infer worker), which the
// crash cannot be blamed on (supervisor/front poison.go). Nil slot: none.
func atWork(slot *shm.Slot, ctx *fasthttp.RequestCtx) shm.Work {
	if slot == nil {
		return shm.Work{}
	}
	t := worker.Token(ctx.Request.Header.Peek(worker.TokenHeader))
	return slot.Begin(t, t) // a decode is a unit of its own
}
