package lb

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// waitLimit bounds every wait on a readiness signal.
const waitLimit = 10 * time.Second

// shortDir returns a temp dir with a path short enough for sun_path.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testBackend is a real fasthttp server on a Unix socket that counts the
// requests it handles.
type testBackend struct {
	Backend
	hits atomic.Int64
	srv  *fasthttp.Server
}

// startBackend serves h (or, if nil, a handler answering its name and the
// request id it saw) on dir/name.sock.
func startBackend(t testing.TB, dir, name string, h fasthttp.RequestHandler) *testBackend {
	t.Helper()
	tb := &testBackend{Backend: Backend{Name: name, Socket: filepath.Join(dir, name+".sock")}}
	if h == nil {
		h = nameHandler(name)
	}
	tb.srv = &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		tb.hits.Add(1)
		h(ctx)
	}}
	ln, err := net.Listen("unix", tb.Socket)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tb.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := tb.srv.ShutdownWithContext(ctx); err != nil {
			t.Errorf("shutting down backend %s: %v", name, err)
		}
		// A Shutdown that ran before Serve took ln did not close it.
		_ = ln.Close()
		<-done
	})
	return tb
}

func nameHandler(name string) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.Set("X-Backend", name)
		ctx.Response.Header.SetBytesV("X-Seen-Request-Id", ctx.Request.Header.Peek(HeaderRequestID))
		ctx.SetBodyString(name)
	}
}

// blockingHandler reports each arrival on arrived, then waits for gate.
func blockingHandler(name string, arrived chan<- string, gate <-chan struct{}) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		arrived <- name
		<-gate
		nameHandler(name)(ctx)
	}
}

// startFront serves p on a Unix socket and returns a client for it that
// never retries, so every proxy answer is seen as is.
func startFront(t testing.TB, dir string, p *Proxy) *fasthttp.HostClient {
	t.Helper()
	sock := filepath.Join(dir, "front.sock")
	srv := &fasthttp.Server{Handler: p.ServeHTTP}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := srv.ShutdownWithContext(ctx); err != nil {
			t.Errorf("shutting down front: %v", err)
		}
		<-done
	})
	return unixClient(sock)
}

func unixClient(sock string) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                      "lb",
		Dial:                      func(string) (net.Conn, error) { return net.Dial("unix", sock) },
		MaxIdemponentCallAttempts: 1,
		MaxConns:                  1024,
		NoDefaultUserAgentHeader:  true,
		ReadTimeout:               waitLimit,
		WriteTimeout:              waitLimit,
	}
}

// result is what the tests look at in a response; it crosses goroutines.
type result struct {
	status      int
	body        string
	contentType string
	requestID   string
	seenID      string
	backend     string
	err         error
}

// get sends GET path with the given header pairs.
func get(c *fasthttp.HostClient, path string, hdr ...string) result {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://lb" + path)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := c.DoTimeout(req, resp, waitLimit); err != nil {
		return result{err: err}
	}
	return result{
		status:      resp.StatusCode(),
		body:        string(resp.Body()),
		contentType: string(resp.Header.ContentType()),
		requestID:   string(resp.Header.Peek(HeaderRequestID)),
		seenID:      string(resp.Header.Peek("X-Seen-Request-Id")),
		backend:     string(resp.Header.Peek("X-Backend")),
	}
}

// goGet sends get on its own goroutine.
func goGet(c *fasthttp.HostClient, path string) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- get(c, path) }()
	return ch
}

func wantOK(t *testing.T, r result) {
	t.Helper()
	if r.err != nil || r.status != fasthttp.StatusOK {
		t.Fatalf("got status %d err %v body %q; want 200", r.status, r.err, r.body)
	}
}

// wantJSONError checks a V2 error answer.
func wantJSONError(t *testing.T, r result, status int) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("request failed: %v", r.err)
	}
	if r.status != status {
		t.Fatalf("got status %d body %q; want %d", r.status, r.body, status)
	}
	if r.contentType != "application/json" {
		t.Errorf("got Content-Type %q; want application/json", r.contentType)
	}
	var v struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &v); err != nil || v.Error == "" {
		t.Errorf("body %q is not a V2 error: %v", r.body, err)
	}
	if r.requestID == "" {
		t.Errorf("error response has no %s", HeaderRequestID)
	}
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// closer is a backend that reads a request head and closes without
// answering: the request was certainly sent.
type closer struct {
	Backend
	requests atomic.Int64
}

func startCloser(t *testing.T, dir, name string) *closer {
	t.Helper()
	c := &closer{Backend: Backend{Name: name, Socket: filepath.Join(dir, name+".sock")}}
	serveUnix(t, c.Socket, func(conn net.Conn) {
		_ = readHead(bufio.NewReader(conn))
		c.requests.Add(1)
		conn.Close()
	})
	return c
}

func statsOf(p *Proxy, name string) BackendStats {
	for _, s := range p.Stats() {
		if s.Name == name {
			return s
		}
	}
	return BackendStats{Name: name}
}
