package front

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Chunked bodies declare nothing, so the header reserves nothing: the
// budget is taken as their buffers grow. These tests send what a client
// that lies with chunks can send and check the master holds nothing after.

const chunkedHead = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

func chunkOf(n int) string {
	return fmt.Sprintf("%x\r\n%s\r\n", n, strings.Repeat("k", n))
}

// TestChunkedBodiesFillTheBudget: a chunked body that grows past what the
// budget has left (max_body_bytes would allow it) is cut with 503 and
// Retry-After, its connection closed, and everything it reserved is given
// back, though its client never ends the body.
func TestChunkedBodiesFillTheBudget(t *testing.T) {
	f := startFront(t, func(c *config.Config) { c.Limits.MaxBodyBytesInFlight = 1 << 20 }) // max_body_bytes 4 MiB
	c := f.dial(t)
	chunk := chunkOf(256 << 10)
	resp := f.exchange(t, c, chunkedHead+strings.Repeat(chunk, 8)) // 2 MiB, no last chunk
	if b := body(t, resp); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(b, "max_body_bytes_in_flight") {
		t.Fatalf("a chunked body growing past a 1 MiB budget: %d %s, want 503 + Retry-After", resp.StatusCode, b)
	}
	if !closedSoon(c) {
		t.Error("the connection stayed open after a chunked body was refused mid-body")
	}
	f.waitBudgetEmpty(t)
}

// TestChunkedBodyStallsAndHangsUp: a chunked body that stops mid-chunk is
// cut with 408 after body_timeout, and one whose client hangs up mid-chunk
// is given back at once; neither leaves budget bytes or an in-flight place.
func TestChunkedBodyStallsAndHangsUp(t *testing.T) {
	f := startFront(t, func(c *config.Config) { c.Limits.BodyTimeout = config.Duration{Duration: 300 * time.Millisecond} })
	partial := chunkedHead + chunkOf(100<<10) + fmt.Sprintf("%x\r\n%s", 100<<10, strings.Repeat("k", 10))

	c := f.dial(t)
	start := time.Now()
	resp := f.exchange(t, c, partial)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a chunked body stalled mid-chunk: %d, want 408", resp.StatusCode)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the stalled chunked body was cut after %v, body_timeout is 300ms", took)
	}
	f.waitBudgetEmpty(t)

	c2, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c2, partial); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "the chunked body's buffers reserved", func() bool { return f.fr.adm.Bodies().InUse() > 100<<10 })
	c2.Close()
	f.waitBudgetEmpty(t)

	small := `{"inputs":[]}`
	resp = f.exchange(t, f.dial(t), fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(small), small))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the stalled and hung-up chunked bodies: %d, want 200", resp.StatusCode)
	}
}

// TestChunkedWithContentLengthIsRefused: a request that declares both a
// Content-Length and a chunked body (request smuggling's classic lie) is
// refused 400 from its header, as nginx does, whatever the order or case
// of the two, and its connection is closed after the answer (RFC 9112
// 6.3), so the request written after it on the connection (a smuggled
// one, to a proxy that trusted the Content-Length) is never served.
func TestChunkedWithContentLengthIsRefused(t *testing.T) {
	f := startFront(t, nil)
	after := "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, head := range []string{
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"transfer-encoding: chunked\r\ncontent-length: 5\r\n",
	} {
		c := f.dial(t)
		raw := "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n" + head + "\r\n" + chunkOf(40<<10) + "0\r\n\r\n" + after
		resp := f.exchange(t, c, raw)
		if b := body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "smuggling") {
			t.Fatalf("%q with a chunked body: %d %q, want 400 naming request smuggling", head, resp.StatusCode, b)
		}
		if !resp.Close || !closedSoon(c) {
			t.Fatalf("%q: the connection stays open after the refusal; the request after it could be served", head)
		}
	}
	chunked := "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Content-Length: 5\r\n\r\n" + chunkOf(1<<10) + "0\r\n\r\n"
	if resp := f.exchange(t, f.dial(t), chunked); resp.StatusCode != http.StatusOK {
		t.Fatalf("a chunked body alone (and a header merely named like Content-Length): %d, want 200", resp.StatusCode)
	}
	f.waitBudgetEmpty(t)
}
