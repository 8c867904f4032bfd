package front

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// checker is a stand-in prep worker for prefix checks: it answers a check
// as told (refuse: 400 when the prefix starts with "bad"; hang; die: close
// the connection) and any other request 200 with its body's length, and
// counts what it saw.
type checker struct {
	mode     atomic.Value // "judge", "hang", "die"
	checks   atomic.Int64
	prefixes atomic.Int64 // bytes of prefixes received
	hdr      atomic.Value // the last X-Supervisor-Prefix seen on a request (not a check)
	release  chan struct{}
}

func startChecker(t *testing.T, f *frontHarness) *checker {
	t.Helper()
	c := &checker{release: make(chan struct{})}
	c.mode.Store("judge")
	c.hdr.Store("")
	sock := filepath.Join(t.TempDir(), "checker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{MaxRequestBodySize: 1 << 30, Handler: c.serve, Logger: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { close(c.release); _ = srv.Shutdown() })
	f.proxy.SetBackends([]lb.Backend{{Name: "prep-checker", Socket: sock}})
	return c
}

func (c *checker) serve(ctx *fasthttp.RequestCtx) {
	size := ctx.Request.Header.Peek(worker.PrefixHeader)
	if size == nil || string(ctx.Request.Header.Peek("X-Test-Client-Header")) == "1" {
		c.hdr.Store(string(size))
		ctx.SetBodyString(strconv.Itoa(len(ctx.PostBody())))
		return
	}
	c.checks.Add(1)
	c.prefixes.Add(int64(len(ctx.PostBody())))
	switch c.mode.Load() {
	case "hang":
		<-c.release
	case "die":
		_ = ctx.Conn().Close()
		return
	}
	if bytes.HasPrefix(ctx.PostBody(), []byte("bad")) {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetBodyString(`{"error":"bad from its first bytes (declared ` + string(size) + `)"}`)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// sendBig writes a request with a body of n bytes (starting with start)
// in a goroutine, as a client that sends all of it whatever the answer,
// and returns the response.
func sendBig(t *testing.T, f *frontHarness, n int, start, extra string) (status int, msg string, closed bool) {
	t.Helper()
	c := f.dial(t)
	head := fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n", extra, n)
	go func() {
		body := start + strings.Repeat("x", n-len(start))
		_, _ = io.WriteString(c, head+body) // fails once the master closes: expected
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := readResponse(c)
	if err != nil {
		t.Fatalf("no answer to a %d-byte body: %v", n, err)
	}
	return resp.StatusCode, body(t, resp), resp.Close
}

// TestPrefixCheckRefusesLargeBodyFromFirstBytes: a 32 MiB body the
// prep worker refuses from its prefix gets that answer with the master
// having read no more than its first buffer; the connection is closed and
// the budget freed. One the check passes is read and forwarded whole.
func TestPrefixCheckRefusesLargeBodyFromFirstBytes(t *testing.T) {
	f := startFront(t, func(c *config.Config) { c.MaxBodyBytes = 64 << 20; c.Limits.MaxBodyBytesInFlight = 128 << 20 })
	ck := startChecker(t, f)
	const n = 32 << 20
	before := f.fr.bodies.read.Load()
	status, msg, closed := sendBig(t, f, n, "bad", "")
	read := f.fr.bodies.read.Load() - before
	if status != 400 || !strings.Contains(msg, "bad from its first bytes (declared 33554432)") || !closed {
		t.Errorf("refused body: %d %q, connection closed %v; want 400 with the check's message, closed", status, msg, closed)
	}
	if read > firstBodyBuffer {
		t.Errorf("the master read %d body bytes of a body refused from its first %d", read, firstBodyBuffer)
	}
	if got := ck.prefixes.Load(); got != firstBodyBuffer {
		t.Errorf("the check got %d bytes, want the first buffer (%d)", got, firstBodyBuffer)
	}
	f.waitBudgetEmpty(t)
	before = f.fr.bodies.read.Load()
	status, msg, _ = sendBig(t, f, n, "good", "")
	if status != 200 || msg != strconv.Itoa(n) || f.fr.bodies.read.Load()-before != n {
		t.Errorf("passed body: %d %q, %d bytes read; want 200 and all %d forwarded", status, msg, f.fr.bodies.read.Load()-before, n)
	}
	if ck.checks.Load() != 2 || f.fr.bodies.checksRefused.Load() != 1 || f.fr.bodies.checksPassed.Load() != 1 {
		t.Errorf("checks: %d asked, %d refused, %d passed; want 2, 1, 1", ck.checks.Load(), f.fr.bodies.checksRefused.Load(), f.fr.bodies.checksPassed.Load())
	}
	f.waitBudgetEmpty(t)
}

// TestPrefixCheckOnlyForLargeBodies: a body that fits the first buffer
// is not checked (it is forwarded whole at once).
func TestPrefixCheckOnlyForLargeBodies(t *testing.T) {
	f := startFront(t, nil)
	ck := startChecker(t, f)
	if status, msg, _ := sendBig(t, f, firstBodyBuffer, "bad", ""); status != 200 || msg != strconv.Itoa(firstBodyBuffer) {
		t.Errorf("a body of exactly the first buffer: %d %q, want 200 forwarded whole", status, msg)
	}
	if ck.checks.Load() != 0 {
		t.Errorf("%d prefix checks for a body that fits the first buffer", ck.checks.Load())
	}
}

// TestPrefixCheckChunked: a chunked body is checked once it outgrows the
// first buffer, with the length unknown (-1), and refused there.
func TestPrefixCheckChunked(t *testing.T) {
	f := startFront(t, nil)
	ck := startChecker(t, f)
	c := f.dial(t)
	go func() {
		_, _ = io.WriteString(c, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := "bad" + strings.Repeat("x", 32<<10-3)
		for range 64 {
			if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return
			}
			chunk = strings.Repeat("y", 32<<10)
		}
		_, _ = io.WriteString(c, "0\r\n\r\n")
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := readResponse(c)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != 400 || !strings.Contains(b, "(declared -1)") {
		t.Errorf("chunked: %d %q, want 400 from the check of a body of unknown length", resp.StatusCode, b)
	}
	if ck.checks.Load() != 1 {
		t.Errorf("%d checks, want 1", ck.checks.Load())
	}
	f.waitBudgetEmpty(t)
}

// TestPrefixCheckFailuresLetTheBodyGoOn: a prep worker that hangs (past
// prefixCheckTimeout) or dies during the check does not fail the
// request: the body is read and forwarded as ever.
func TestPrefixCheckFailuresLetTheBodyGoOn(t *testing.T) {
	f := startFront(t, nil)
	ck := startChecker(t, f)
	const n = 1 << 20
	for _, mode := range []string{"die", "hang"} {
		ck.mode.Store(mode)
		status, msg, _ := sendBig(t, f, n, "bad", "")
		if status != 200 || msg != strconv.Itoa(n) {
			t.Errorf("check %s: %d %q, want 200 and the whole body forwarded", mode, status, msg)
		}
	}
	if got := f.fr.bodies.checksNA.Load(); got != 2 {
		t.Errorf("%d unanswered checks counted, want 2", got)
	}
	f.waitBudgetEmpty(t)
}

// TestPrefixHeaderFromClientsIsRemoved: a client cannot ask for (or fake)
// a prefix check: its X-Supervisor-Prefix header never reaches a worker.
func TestPrefixHeaderFromClientsIsRemoved(t *testing.T) {
	f := startFront(t, nil)
	ck := startChecker(t, f)
	status, msg, _ := sendBig(t, f, 100, "bad", "X-Test-Client-Header: 1\r\n"+worker.PrefixHeader+": 5\r\n")
	if status != 200 || msg != "100" || ck.hdr.Load() != "" {
		t.Errorf("%d %q; the worker saw %s %q, want 200 forwarded without it", status, msg, worker.PrefixHeader, ck.hdr.Load())
	}
}

func readResponse(c net.Conn) (*http.Response, error) {
	return http.ReadResponse(bufio.NewReader(c), nil)
}
