package prep

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
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
	sock := filepath.Join(t.TempDir(), "prep.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h.serve}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return net.Dial("unix", sock) }}
	header := fmt.Sprintf(`{"inputs":[{"name":"ids","datatype":"INT64","shape":[%d,4],"parameters":{"binary_data_size":%d}}]}`, rows, rows*32)
	body := append([]byte(header), make([]byte, rows*32)...)
	for i := range 3 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://prep/v2/models/types/infer")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.Set(headerLenHeader, strconv.Itoa(len(header)))
		req.SetBodyRaw(body)
		err := c.DoTimeout(req, resp, time.Minute)
		if code := resp.StatusCode(); err != nil || code == fasthttp.StatusOK || code == fasthttp.StatusServiceUnavailable {
			t.Fatalf("request %d, its infer worker killed: %v %d %.200q, want an error other than 503 (the room of those before given back)", i, err, code, resp.Body())
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		waitState(t, g, gateState{})
		if n := inf.hits.Load(); n != int64(i+1) {
			t.Fatalf("%d requests reached the infer worker after %d sent, want each", n, i+1)
		}
	}
}
