package prep

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// TestKilledInferGivesTheAnswerRoomBack, through a real fasthttp server:
// a request whose answer room was taken from the model's declared
// outputs, and whose infer worker dies before answering (the connection
// closed, no answer), is answered an error and gives the room back once
// that is written, so each next request in a lane with room for one
// answer reaches the infer worker rather than 503.
func TestKilledInferGivesTheAnswerRoomBack(t *testing.T) {
	const rows = 64 << 10 // 2 MiB of INT64 outputs declared, 7.25 MiB with their JSON
	g := testGate(1, 1<<20, 1<<20+16<<20)
	h, inf := typesHandlerFor(t, g, func(ctx *fasthttp.RequestCtx) {
		ctx.Hijack(func(net.Conn) {}) // the worker dies: fasthttp closes the connection unanswered
	})
	post := serveTypes(t, h, rows)
	for i := range 3 {
		resp := fasthttp.AcquireResponse()
		err := post(resp)
		if code := resp.StatusCode(); err != nil || code == fasthttp.StatusOK || code == fasthttp.StatusServiceUnavailable {
			t.Fatalf("request %d, its infer worker killed: %v %d %.200q, want an error other than 503 (the room of those before given back)", i, err, code, resp.Body())
		}
		fasthttp.ReleaseResponse(resp)
		waitState(t, g, decodegate.State{})
		if n := inf.hits.Load(); n != int64(i+1) {
			t.Fatalf("%d requests reached the infer worker after %d sent, want each", n, i+1)
		}
	}
}
