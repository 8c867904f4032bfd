package infer

import (
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/logtest"
)

// TestHandlerPanicIsAnswered500AndTheWorkerServesOn: a request whose
// handler panics (here through panicHook, outside any model run) is
// answered 500 naming an internal error, the panic is logged at error
// level with its stack, and the same server answers the next requests.
// Without recoverPanic the panic ends the process (this test binary),
// which the master would take for a crash on the request.
func TestHandlerPanicIsAnswered500AndTheWorkerServesOn(t *testing.T) {
	var logs logtest.Buffer
	var panics atomic.Int32
	s := &server{log: zerolog.New(&logs)}
	s.cat.Store(&catalog{metaJSON: []byte("[]")})
	s.panicHook = func(*fasthttp.RequestCtx) {
		if panics.Add(1) == 1 {
			var m map[string]int
			//lint:ignore SA5000 the panic under test
			m["a bug"]++ // assignment to entry in nil map
		}
	}
	sock := filepath.Join(t.TempDir(), "infer.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: s.handle}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	t.Cleanup(func() { srv.Shutdown() })
	c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return net.Dial("unix", sock) }}
	do := func(method, path string) (int, string) {
		t.Helper()
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(method)
		req.SetRequestURI("http://infer" + path)
		if err := c.DoTimeout(req, resp, 30*time.Second); err != nil {
			t.Fatalf("%s %s: %v, want an answer from the worker", method, path, err)
		}
		return resp.StatusCode(), string(resp.Body())
	}

	status, body := do(fasthttp.MethodPost, "/infer")
	if status != fasthttp.StatusInternalServerError || !strings.Contains(body, "internal error in the infer worker") ||
		!strings.Contains(body, "nil map") {
		t.Errorf("a request whose handler panicked: %d %q, want 500 naming an internal error and the panic", status, body)
	}
	log := logs.String()
	if !strings.Contains(log, `"level":"error"`) || !strings.Contains(log, `"panic":"assignment to entry in nil map"`) ||
		!strings.Contains(log, "panic_test.go") {
		t.Errorf("log after the panic: %s\nwant an error line with the panic and its stack", log)
	}
	// The worker serves on: the next /infer runs the handler again (an
	// empty frame is a plain 400), and /metadata answers.
	if status, body := do(fasthttp.MethodPost, "/infer"); status != fasthttp.StatusBadRequest || !strings.Contains(body, "bad magic") {
		t.Errorf("the request after the panic: %d %q, want 400 for its empty frame", status, body)
	}
	if status, body := do(fasthttp.MethodGet, "/metadata"); status != fasthttp.StatusOK || body != "[]" {
		t.Errorf("/metadata after the panic: %d %q, want 200 []", status, body)
	}
}
