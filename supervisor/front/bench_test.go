package front

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkFrontHop is the master's hop as bench-vs-nginx's meta case
// crosses it: a keep-alive client over loopback TCP asks GET
// /v2/models/mlp through the public server (admission, the connection
// cap, coarse deadlines, the lb) of a stand-in prep worker on a Unix
// socket; the worker's cost is in it, as in the benchmark. serial is one
// connection, one request at a time (where wake-ups weigh most); c64 is
// 64 connections at once. cpu-ns/op is the process's CPU time (client,
// front and worker together) per request: on a shared machine it moves
// far less than ns/op, which counts the time others ran. ctxsw/op counts
// the process's context switches (voluntary: a thread that slept, the
// Go scheduler parking on a read with nothing else to run; and
// involuntary) per request.
func BenchmarkFrontHop(b *testing.B) {
	f := startFront(b, nil)
	upstream(b, f, func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"name":"mlp","versions":["1"],"platform":"onnxruntime_onnx"}`)
	})
	client := &fasthttp.HostClient{
		Addr:                     f.addr,
		Dial:                     func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) },
		MaxConns:                 64,
		NoDefaultUserAgentHeader: true,
		ReadTimeout:              10 * time.Second,
		WriteTimeout:             10 * time.Second,
	}
	do := func(b *testing.B, req *fasthttp.Request, resp *fasthttp.Response) bool {
		if err := client.Do(req, resp); err != nil {
			b.Error(err)
			return false
		}
		if resp.StatusCode() != fasthttp.StatusOK {
			b.Errorf("status %d body %q", resp.StatusCode(), resp.Body())
			return false
		}
		return true
	}
	newReq := func() *fasthttp.Request {
		req := fasthttp.AcquireRequest()
		req.SetRequestURI("http://" + f.addr + "/v2/models/mlp")
		return req
	}
	b.Run("serial", func(b *testing.B) {
		req, resp := newReq(), fasthttp.AcquireResponse()
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if !do(b, req, resp) {
				return
			}
		}
	})
	b.Run("c64", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32) // 64 goroutines on 2 CPUs
		defer reportCPU(b)()
		b.RunParallel(func(pb *testing.PB) {
			req, resp := newReq(), fasthttp.AcquireResponse()
			for pb.Next() {
				if !do(b, req, resp) {
					return
				}
			}
		})
	})
}

// reportCPU starts counting the process's CPU time and context
// switches; the function it returns reports them per op (cpu-ns/op,
// ctxsw/op).
func reportCPU(b *testing.B) func() {
	cpu, sw := usage(b)
	return func() {
		cpu1, sw1 := usage(b)
		b.ReportMetric(float64(cpu1-cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(sw1-sw)/float64(b.N), "ctxsw/op")
	}
}

// usage is the process's CPU time and context switches so far.
func usage(b *testing.B) (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw + ru.Nivcsw
}
