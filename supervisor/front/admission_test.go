package front

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/conncap"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// frontHarness is a master's public server on a loopback port, proxying
// to a stand-in prep worker on a Unix socket that answers 200 with the
// length of the body it received. No worker processes: what is tested is
// the front's admission and body handling, over real sockets.
type frontHarness struct {
	fr    *Front
	proxy *lb.Proxy
	addr  string
	sock  string // the stand-in prep worker's socket
	ln    *conncap.Listener
}

// open is how many client connections the front holds now.
func (f *frontHarness) open() int64 { return f.ln.Open() }

func startFront(t testing.TB, edit func(*config.Config), opts ...func(*Options)) *frontHarness {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.Models = []config.ModelConfig{{Name: "mlp", Path: "models/mlp.onnx", Batching: config.DefaultBatching()}}
	cfg.MaxBodyBytes = 4 << 20
	cfg.Limits.MaxBodyBytesInFlight = 8 << 20
	cfg.Limits.BodyTimeout = config.Duration{Duration: time.Second}
	if edit != nil {
		edit(cfg)
	}
	fr, _, proxy := newTestFront(cfg, opts...)
	keys, err := admission.LoadKeys(cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	fr.SetKeys(keys)
	fr.SetServing(true)

	sock := filepath.Join(t.TempDir(), "prep.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	up := &fasthttp.Server{MaxRequestBodySize: 1 << 30, Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetBodyString(strconv.Itoa(len(ctx.PostBody())))
	}}
	go func() { _ = up.Serve(uln) }()
	proxy.SetBackends([]lb.Backend{{Name: "prep-0", Socket: sock}})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := fr.Server()
	capped := fr.capConnections(ln, cfg.Limits.MaxConnections)
	go func() { _ = front.Serve(capped) }()
	t.Cleanup(func() {
		_ = front.Shutdown()
		_ = up.Shutdown()
	})
	return &frontHarness{fr: fr, proxy: proxy, addr: ln.Addr().String(), sock: sock, ln: capped}
}

func (f *frontHarness) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange writes raw and reads one response within 5s.
func (f *frontHarness) exchange(t *testing.T, c net.Conn, raw string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within 5s to %.60q: %v", raw, err)
	}
	return resp
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// closedSoon reports whether the server closes c within 5s.
func closedSoon(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	return !isTimeoutErr(err) // EOF or a reset: closed by the server
}

func (f *frontHarness) waitBudgetEmpty(t *testing.T) {
	t.Helper()
	b := &f.fr.adm.Budget
	if !polltest.Wait(10*time.Second, 10*time.Millisecond, func() bool { return b.InUse() == 0 && b.Large() == 0 && f.fr.adm.InFlight() == 0 }) {
		t.Fatalf("after every request ended: %d body bytes (%d large) and %d requests still held", b.InUse(), b.Large(), f.fr.adm.InFlight())
	}
}

const hugeHeader = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n"

// TestRefusedFromHeaderAlone: requests refused by their header are
// answered at once, though not one byte of their (declared 64 MiB) body
// was sent, and their connection is closed after the answer.
func TestRefusedFromHeaderAlone(t *testing.T) {
	const key = "front-test-key-0123456789"
	f := startFront(t, func(c *config.Config) { c.Auth.APIKeys = []string{key} })
	auth := "X-API-Key: " + key + "\r\n"
	for _, tc := range []struct {
		name, raw string
		status    int
		header    string
	}{
		{"no key", hugeHeader + "\r\n", 401, "WWW-Authenticate"},
		{"wrong key", hugeHeader + "X-API-Key: wrong-key-0123456789abc\r\n\r\n", 401, "WWW-Authenticate"},
		{"over max_body_bytes", hugeHeader + auth + "\r\n", 413, ""},
		{"over max_body_bytes, Expect 100-continue", hugeHeader + auth + "Expect: 100-continue\r\n\r\n", 413, ""},
		{"unknown model", "POST /v2/models/nope/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n" + auth + "\r\n", 404, ""},
		{"unknown model version", "POST /v2/models/mlp/versions/2/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n" + auth + "\r\n", 404, ""},
		{"no such route", "POST /v2/models/mlp/train HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n" + auth + "\r\n", 404, ""},
		{"wrong method", "PUT /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n" + auth + "\r\n", 405, "Allow"},
		{"body on a GET route", "POST /v2/health/ready HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", 405, "Allow"},
		{"dot segments to a health route", "POST /v2/health/../models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", 401, "WWW-Authenticate"},
		{"unknown Content-Encoding", hugeHeader[:len(hugeHeader)-len("67108864\r\n")] + "1000\r\nContent-Encoding: br\r\n" + auth + "\r\n", 415, ""},
		{"stacked Content-Encoding", hugeHeader[:len(hugeHeader)-len("67108864\r\n")] + "1000\r\nContent-Encoding: gzip, gzip\r\n" + auth + "\r\n", 415, ""},
		{"chunked without key", "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 401, "WWW-Authenticate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.dial(t)
			resp := f.exchange(t, c, tc.raw)
			b := body(t, resp)
			if resp.StatusCode != tc.status || !strings.HasPrefix(b, `{"error":`) {
				t.Fatalf("answered %d %s, want %d with a V2 error", resp.StatusCode, b, tc.status)
			}
			if tc.header != "" && resp.Header.Get(tc.header) == "" {
				t.Errorf("no %s header on the %d", tc.header, tc.status)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id on the refusal")
			}
			if !closedSoon(c) {
				t.Error("the connection stayed open after refusing a request whose body was not read")
			}
		})
	}
	f.waitBudgetEmpty(t)
}

// TestBodyBudget: declared bodies are reserved from the header; beyond the
// budget a request gets 503 + Retry-After at once; small requests still
// pass while large declarations fill all they may; a body that never
// comes is cut after body_timeout and gives its bytes back.
func TestBodyBudget(t *testing.T) {
	f := startFront(t, nil)                                                                     // max_body_bytes 4 MiB, budget 8 MiB, body_timeout 1s
	large := "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 3670016\r\n\r\n" // 3.5 MiB
	held := []net.Conn{f.dial(t), f.dial(t)}
	for _, c := range held {
		if _, err := io.WriteString(c, large); err != nil {
			t.Fatal(err)
		}
	}
	pollFor(t, "two 3.5 MiB declarations reserved", func() bool { return f.fr.adm.Budget.InUse() == 2*3670016 })

	c := f.dial(t)
	start := time.Now()
	resp := f.exchange(t, c, large)
	if b := body(t, resp); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(b, "max_body_bytes_in_flight") {
		t.Fatalf("a third 3.5 MiB body over an 8 MiB budget (7 MiB for large bodies): %d %s, want 503 + Retry-After", resp.StatusCode, b)
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("the over-budget answer took %v: it must not wait for the body", took)
	}

	small := `{"inputs":[]}`
	resp = f.exchange(t, f.dial(t), fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(small), small))
	if b := body(t, resp); resp.StatusCode != 200 || b != strconv.Itoa(len(small)) {
		t.Fatalf("a small request beside full large reservations: %d %q, want 200 with the upstream seeing %d bytes", resp.StatusCode, b, len(small))
	}

	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		r, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || r.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("a declared body that never came: %v %v, want 408 after body_timeout", r, err)
		}
	}
	f.waitBudgetEmpty(t)
}

// TestSlowBodyIsCut: a body trickled slower than body_min_rate is cut
// with 408 though bytes keep coming, and its budget is given back.
func TestSlowBodyIsCut(t *testing.T) {
	f := startFront(t, func(c *config.Config) {
		c.Limits.BodyTimeout = config.Duration{Duration: 300 * time.Millisecond}
		c.Limits.BodyMinRate = 1 << 10
	})
	c := f.dial(t)
	if _, err := io.WriteString(c, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	answered := make(chan *http.Response, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		r, _ := http.ReadResponse(bufio.NewReader(c), nil)
		answered <- r
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-answered:
			if r == nil || r.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("slow body answered %v, want 408", r)
			}
			f.waitBudgetEmpty(t)
			return
		case <-tick.C:
			_, _ = io.WriteString(c, strings.Repeat("a", 10)) // 200 B/s, under 1 KiB/s
		case <-timeout:
			t.Fatal("a body trickled at 200 B/s was not cut within 10s (body_timeout 300ms, body_min_rate 1KiB)")
		}
	}
}

// TestChunkedBody: a chunked body is forwarded whole (with its length)
// when it fits, and cut with 413 once it grows past max_body_bytes.
func TestChunkedBody(t *testing.T) {
	f := startFront(t, func(c *config.Config) { c.MaxBodyBytes = 64 << 10; c.Limits.MaxBodyBytesInFlight = 1 << 20 })
	chunk := strings.Repeat("b", 40<<10)
	head := "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	one := fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk)
	resp := f.exchange(t, f.dial(t), head+one+"0\r\n\r\n")
	if b := body(t, resp); resp.StatusCode != 200 || b != strconv.Itoa(len(chunk)) {
		t.Fatalf("a 40 KiB chunked body: %d %q, want 200 and %d bytes upstream", resp.StatusCode, b, len(chunk))
	}
	c := f.dial(t)
	resp = f.exchange(t, c, head+one+one)
	if b := body(t, resp); resp.StatusCode != 413 {
		t.Fatalf("an 80 KiB chunked body over max_body_bytes 64 KiB: %d %s, want 413", resp.StatusCode, b)
	}
	if !closedSoon(c) {
		t.Error("the connection stayed open after a chunked body was cut")
	}
	f.waitBudgetEmpty(t)
}

// TestKeepAliveAfterBodies: admitted bodies of every size path (within
// the pre-read, past the first buffer) reach the upstream whole, one after
// another on one connection.
func TestKeepAliveAfterBodies(t *testing.T) {
	f := startFront(t, nil)
	c := f.dial(t)
	for _, n := range []int{0, 1, 8 << 10, 100 << 10, 3 << 20} {
		resp := f.exchange(t, c, fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", n, strings.Repeat("c", n)))
		if b := body(t, resp); resp.StatusCode != 200 || b != strconv.Itoa(n) {
			t.Fatalf("a %d-byte body: %d %q, want 200 and %d bytes upstream", n, resp.StatusCode, b, n)
		}
	}
	f.waitBudgetEmpty(t)
}

func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, what, cond)
}

// TestHeaderHookPanicIsRefused: a panic while deciding a request (here: no
// config at all) is recovered into a 500 verdict for the handler, with the
// body declared empty so none of it is read, instead of killing the master.
func TestHeaderHookPanicIsRefused(t *testing.T) {
	m, b, _ := newTestFront(config.DefaultConfig())
	b.cfg.Store(nil)
	var h fasthttp.RequestHeader
	h.SetMethod(fasthttp.MethodPost)
	h.SetRequestURI("/v2/models/default/infer")
	h.SetContentLength(1 << 20)
	m.headerReceived(&h) // must not panic
	v := m.admissions.take(&h)
	if v == nil || v.Status != fasthttp.StatusInternalServerError {
		t.Fatalf("verdict after a panic in the header hook = %+v, want a 500 refusal", v)
	}
	if h.ContentLength() != 0 {
		t.Errorf("Content-Length left at %d: fasthttp would read the body of a refused request", h.ContentLength())
	}
}

// TestExpectContinueAdmitted: an admitted request that asks for
// "100 Continue" gets it, then its answer once the body is sent.
func TestExpectContinueAdmitted(t *testing.T) {
	f := startFront(t, nil)
	c := f.dial(t)
	if _, err := io.WriteString(c, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("first line %q (%v), want HTTP/1.1 100 Continue", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // the blank line after 100 Continue
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "hello"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != 200 || b != "5" {
		t.Fatalf("after 100 Continue and the body: %d %q, want 200 and 5 bytes upstream", resp.StatusCode, b)
	}
	f.waitBudgetEmpty(t)
}

// TestHungUpBodiesGiveEverythingBack: clients that declare a body and hang
// up after part of it (or right after the header) hold nothing once the
// master notices: no budget bytes, no max_in_flight place (their buffers,
// mapped in these tests, are unmapped on the way), and the master serves
// the next request.
func TestHungUpBodiesGiveEverythingBack(t *testing.T) {
	f := startFront(t, func(c *config.Config) { c.Limits.BodyTimeout = config.Duration{Duration: 10 * time.Second} })
	const declared = 3 << 20 // 3 MiB of a 4 MiB max_body_bytes
	header := fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", declared)
	for i, sent := range []int{0, 100, 1 << 20, declared - 1} {
		c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, header+strings.Repeat("x", sent)); err != nil {
			t.Fatal(err)
		}
		pollFor(t, fmt.Sprintf("client %d's declaration reserved", i), func() bool { return f.fr.adm.Budget.InUse() == declared })
		c.Close() // long before body_timeout
		f.waitBudgetEmpty(t)
	}
	small := `{"inputs":[]}`
	resp := f.exchange(t, f.dial(t), fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(small), small))
	if b := body(t, resp); resp.StatusCode != 200 || b != strconv.Itoa(len(small)) {
		t.Fatalf("after four hung-up bodies: %d %q, want 200", resp.StatusCode, b)
	}
}
