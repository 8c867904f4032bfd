package lb

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkProxy and BenchmarkDirect send the same request to the same
// trivial backend, through the Proxy and straight; the difference is the
// proxy's cost (one more Unix-socket hop included). Allocations count every
// goroutine in the process: client, proxy and backend.
func BenchmarkProxy(b *testing.B) {
	dir := shortDir(b)
	be := startBackend(b, dir, "bench", okHandler)
	p := New(Options{})
	p.SetBackends([]Backend{be.Backend})
	benchmarkClient(b, startFront(b, dir, p))
}

func BenchmarkDirect(b *testing.B) {
	dir := shortDir(b)
	be := startBackend(b, dir, "bench", okHandler)
	benchmarkClient(b, unixClient(be.Socket))
}

func okHandler(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }

func benchmarkClient(b *testing.B, c *fasthttp.HostClient) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://lb/v2/models/m/infer")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetBodyString(`{"inputs":[]}`)
		for pb.Next() {
			if err := c.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			if resp.StatusCode() != fasthttp.StatusOK {
				b.Errorf("status %d body %q", resp.StatusCode(), resp.Body())
				return
			}
		}
	})
}
