package front

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/conncap"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// serveCapped serves a fasthttp server that answers 200 to everything on
// loopback, behind a cap of maxConns, and returns its address.
func serveCapped(t *testing.T, maxConns int) (string, *conncap.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := newCapListener(ln, maxConns)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {}, Concurrency: 2 * maxConns}
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String(), cl
}

// get sends one keep-alive GET on c and returns the response.
func get(t *testing.T, c net.Conn, r *bufio.Reader) *http.Response {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// An over-cap connection gets a V2 503 with Retry-After, is closed, and
// does not take a place: once a held connection closes, a new one is
// served.
func TestCapListenerRefusesOverCapWithV2Answer(t *testing.T) {
	const maxConns = 3
	addr, cl := serveCapped(t, maxConns)
	var held []net.Conn
	for range maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if resp := get(t, c, bufio.NewReader(c)); resp.StatusCode != http.StatusOK {
			t.Fatalf("connection under the cap: status %d", resp.StatusCode)
		}
		held = append(held, c)
	}
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	_ = over.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil {
		t.Fatalf("over the cap: no answer: %v", err)
	}
	var body struct{ Error string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error == "" {
		t.Fatalf("over the cap: body is not a V2 error: %v %+v", err, body)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/json" || !resp.Close {
		t.Fatalf("over the cap: status %d, headers %v; want 503, Retry-After, JSON, close", resp.StatusCode, resp.Header)
	}
	if got := cl.Refused(); got != 1 {
		t.Fatalf("refused = %d, want 1", got)
	}

	held[0].Close()
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the closed connection's place given back",
		func() bool { return cl.Open() < maxConns })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp := get(t, c, bufio.NewReader(c)); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a place was freed: status %d", resp.StatusCode)
	}
}
