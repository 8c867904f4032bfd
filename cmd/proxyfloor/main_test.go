package main

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"
)

// backend serves on a Unix socket, answering with the X-Request-Id it got.
func backend(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetBody(append([]byte("id="), ctx.Request.Header.Peek("X-Request-Id")...))
	}}
	go s.Serve(ln) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { s.Shutdown() })
	return sock
}

// do sends GET / to f's handler in memory and returns the answer.
func do(t *testing.T, f *floor) (int, string) {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("http://x/")
	f.handle(&ctx)
	return ctx.Response.StatusCode(), string(ctx.Response.Body())
}

// TestFloorProxiesWithRequestIDs: the floor forwards to its upstream,
// which sees a fresh request id each time.
func TestFloorProxiesWithRequestIDs(t *testing.T) {
	f, err := newFloor([]string{backend(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"id=1", "id=2"} {
		if code, body := do(t, f); code != 200 || body != want {
			t.Errorf("answer %d %q, want 200 %q", code, body, want)
		}
	}
	if n := f.ups[0].inFlight.Load(); n != 0 {
		t.Errorf("%d requests still counted in flight, want 0", n)
	}
}

// TestFloorAnswers502WhenTheUpstreamIsGone: a socket nobody listens on
// gives 502, not a hang.
func TestFloorAnswers502WhenTheUpstreamIsGone(t *testing.T) {
	f, err := newFloor([]string{filepath.Join(t.TempDir(), "none.sock")})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := do(t, f); code != fasthttp.StatusBadGateway {
		t.Errorf("status %d, want 502", code)
	}
}

// TestFloorNeedsAnUpstream: no socket is a start-up error.
func TestFloorNeedsAnUpstream(t *testing.T) {
	if _, err := newFloor([]string{""}); err == nil {
		t.Error("newFloor with no socket: no error")
	}
}
