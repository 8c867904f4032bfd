package front

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// answerUpstream makes f's prep worker answer each request with as many
// bytes as its body asks for (a decimal number), marked as a binary
// answer, so a refusal must drop the worker's headers with its body.
func answerUpstream(t *testing.T, f *frontHarness) {
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		n, err := strconv.Atoi(string(ctx.PostBody()))
		if err != nil {
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
			return
		}
		ctx.Response.Header.Set("Inference-Header-Content-Length", "7")
		ctx.SetBody(bytes.Repeat([]byte("0123456789abcdef"), n/16))
	})
}

// askAnswer sends a request for an answer of n bytes on c.
func askAnswer(t *testing.T, c net.Conn, n int) {
	t.Helper()
	b := strconv.Itoa(n)
	if _, err := fmt.Fprintf(c, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		t.Fatal(err)
	}
}

// unreadAnswerFront is a front whose budget is 64 MiB (56 MiB for
// large bodies and answers), with write_timeout wt, and answerUpstream.
func unreadAnswerFront(t *testing.T, wt time.Duration) *frontHarness {
	f := startFront(t, func(c *config.Config) {
		c.Limits.MaxBodyBytesInFlight = 64 << 20
		c.Limits.WriteTimeout = config.Duration{Duration: wt}
	})
	answerUpstream(t, f)
	return f
}

const answerBytes = 20 << 20

// TestUnreadAnswersAreCharged: clients that ask for large answers and
// never read them hold the master's memory until write_timeout; the
// answers are charged to the body budget meanwhile, so the third 20 MiB
// answer over a 56 MiB share is refused 503 (the worker's headers gone),
// one over the share could never fit and is 500, and once the
// non-readers hang up the budget is whole again and an answer reaches a
// reading client intact.
func TestUnreadAnswersAreCharged(t *testing.T) {
	f := unreadAnswerFront(t, time.Minute)
	held := []net.Conn{f.dial(t), f.dial(t)}
	for _, c := range held {
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		askAnswer(t, c, answerBytes)
	}
	pollFor(t, "two unread 20 MiB answers charged", func() bool { return f.fr.adm.Bodies().InUse() == 2*answerBytes })

	resp := f.exchange(t, f.dial(t), fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n%d", answerBytes))
	if b := body(t, resp); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(b, "max_body_bytes_in_flight") ||
		resp.Header.Get("Inference-Header-Content-Length") != "" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("a third 20 MiB answer beside two unread: %d %v %.200s, want 503 + Retry-After, a request id and no worker headers", resp.StatusCode, resp.Header, b)
	}
	resp = f.exchange(t, f.dial(t), "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n62914560")
	if b := body(t, resp); resp.StatusCode != 500 || !strings.Contains(b, "raise limits.max_body_bytes_in_flight") {
		t.Fatalf("a 60 MiB answer over a 56 MiB share: %d %.200s, want 500 naming the budget", resp.StatusCode, b)
	}
	for _, c := range held {
		c.Close()
	}
	f.waitBudgetEmpty(t)

	c := f.dial(t)
	askAnswer(t, c, answerBytes)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), answerBytes/16)
	if got, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != 200 || !bytes.Equal(got, want) {
		t.Fatalf("a read 20 MiB answer: %d, %d bytes, %v; want 200 and the worker's %d bytes", resp.StatusCode, len(got), err, len(want))
	}
	f.waitBudgetEmpty(t)
}

// TestUnreadAnswerGivenBackAtWriteTimeout: an answer its client never
// reads nor hangs up on is charged until write_timeout cuts the
// connection, then given back, and the master lets the connection go.
func TestUnreadAnswerGivenBackAtWriteTimeout(t *testing.T) {
	f := unreadAnswerFront(t, 500*time.Millisecond)
	c := f.dial(t)
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	askAnswer(t, c, answerBytes)
	pollFor(t, "the unread 20 MiB answer charged", func() bool { return f.fr.adm.Bodies().InUse() == answerBytes })
	f.waitBudgetEmpty(t)
	pollFor(t, "the unread answer's connection closed", func() bool { return f.open() == 0 })
}

// stalledBody is a worker's answer body that sends its first 64 KiB
// (so that its header leaves the worker's write buffer) and nothing more
// until its test ends.
type stalledBody struct {
	sent int
	done <-chan struct{}
}

func (s *stalledBody) Read(p []byte) (int, error) {
	if s.sent < 64<<10 {
		n := min(len(p), 64<<10-s.sent)
		s.sent += n
		return n, nil
	}
	<-s.done
	return 0, io.EOF
}

// TestAnswerRefusedFromItsHeader: a worker's answer that declares more
// than the master may hold is refused from its header, before its body
// is read: the client gets 500 naming the budget at once, though the
// worker never sends the body (read first, it would hold the request to
// its timeout), the refusal is counted, and nothing stays charged.
func TestAnswerRefusedFromItsHeader(t *testing.T) {
	f := unreadAnswerFront(t, time.Minute)
	stalled := make(chan struct{})
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		ctx.SetBodyStream(&stalledBody{done: stalled}, 200<<20)
	})
	t.Cleanup(func() { close(stalled) }) // before the worker's shutdown waits on it
	c := f.dial(t)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	resp := f.exchange(t, c, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n1")
	if b := body(t, resp); resp.StatusCode != 500 || !strings.Contains(b, "limits.max_body_bytes_in_flight") {
		t.Fatalf("a 200 MiB answer over a 56 MiB share: %d %.200s, want 500 naming the budget", resp.StatusCode, b)
	}
	if n := f.fr.bodies.snapshot().AnswersRefused; n != 1 {
		t.Errorf("answers refused counted %d, want 1", n)
	}
	f.waitBudgetEmpty(t)
}
