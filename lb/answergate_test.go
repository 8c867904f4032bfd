package lb

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// startHugeAnswerer is a backend that answers each request with a header
// declaring a 1 GiB body, sends 64 KiB of it and then waits, reporting
// on closed when the lb closes the connection.
func startHugeAnswerer(t *testing.T, dir string) (Backend, <-chan struct{}) {
	t.Helper()
	b := Backend{Name: "huge", Socket: filepath.Join(dir, "huge.sock")}
	closed := make(chan struct{}, 4)
	serveUnix(t, b.Socket, func(conn net.Conn) { answerHuge(conn, closed) })
	return b, closed
}

// answerHuge reads one request head on conn, writes the start of a 1 GiB
// answer, and reports on closed once a read sees the connection closed.
func answerHuge(conn net.Conn, closed chan<- struct{}) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * waitLimit))
	br := bufio.NewReader(conn)
	if readHead(br) != nil {
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n"); err != nil {
		return
	}
	// The lb's close is a write that fails (it can come while the 64 KiB
	// are still going out: a Unix socket's buffer may hold less), an end
	// of file, or ECONNRESET with what it left unread; the deadline is
	// none of these.
	_, err := conn.Write(make([]byte, 64<<10))
	if err == nil {
		_, err = br.ReadByte()
	}
	if err != nil && !isTimeout(err) {
		closed <- struct{}{}
	}
}

var errTooLarge = errors.New("the answer is too large for the test's budget")

// TestAnswerGateRefusesBeforeTheBody: a gate that refuses an answer from
// its header (here one declaring 1 GiB, of which the backend sends only
// the start) gets it unread: DoRouteFor returns at once, its error is
// ErrAnswerRefused and the gate's own, nothing of the body is in the
// response, and the backend sees its connection closed. Read whole, the
// body would have held the call to its deadline.
func TestAnswerGateRefusesBeforeTheBody(t *testing.T) {
	be, closed := startHugeAnswerer(t, shortDir(t))
	p := New(Options{})
	p.SetBackends([]Backend{be})
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI("http://lb/v2/models/m/infer")
	declared := -3
	gate := func(h *fasthttp.ResponseHeader) error {
		declared = h.ContentLength()
		return errTooLarge
	}
	done := make(chan error, 1)
	go func() { done <- p.DoRouteFor(req, resp, time.Now().Add(3*waitLimit), nil, nil, gate) }()
	err := recv(t, done, "DoRouteFor to refuse the answer from its header")
	if !errors.Is(err, ErrAnswerRefused) || !errors.Is(err, errTooLarge) {
		t.Errorf("DoRouteFor = %v, want ErrAnswerRefused and the gate's error", err)
	}
	if declared != 1<<30 {
		t.Errorf("the gate saw Content-Length %d, want %d", declared, 1<<30)
	}
	if n := len(resp.Body()); n != 0 {
		t.Errorf("the refused answer left %d body bytes in the response, want none", n)
	}
	recv(t, closed, "the backend to see its connection closed")
}

// TestAnswerGateAdmits: an answer the gate admits is read whole, whether
// it declares its length or is chunked (with its trailer), and the gate
// is asked once with what the header declares; a bodiless 204 is not
// asked about.
func TestAnswerGateAdmits(t *testing.T) {
	want := bytes.Repeat([]byte("answer.."), 16<<10) // 128 KiB
	be := startBackend(t, shortDir(t), "a", func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/chunked":
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) { _, _ = w.Write(want) })
		case "/empty":
			ctx.SetStatusCode(fasthttp.StatusNoContent)
		default:
			ctx.SetBody(want)
		}
	})
	p := New(Options{})
	p.SetBackends([]Backend{be.Backend})
	for _, tc := range []struct {
		path     string
		declared []int
		body     []byte
	}{
		{"/sized", []int{len(want)}, want},
		{"/chunked", []int{-1}, want},
		{"/empty", nil, nil},
	} {
		var asked []int
		gate := func(h *fasthttp.ResponseHeader) error {
			asked = append(asked, h.ContentLength())
			return nil
		}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://lb" + tc.path)
		err := p.DoRouteFor(req, resp, time.Now().Add(waitLimit), nil, nil, gate)
		if err != nil || !bytes.Equal(resp.Body(), tc.body) {
			t.Errorf("%s: DoRouteFor = %v with %d body bytes, want nil and %d", tc.path, err, len(resp.Body()), len(tc.body))
		}
		if !equalInts(asked, tc.declared) {
			t.Errorf("%s: the gate was asked with %v, want %v", tc.path, asked, tc.declared)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestServeHTTPForAnswersARefusal503: a client whose answer the gate
// refused gets 503 with the gate's error as its V2 message.
func TestServeHTTPForAnswersARefusal503(t *testing.T) {
	be, closed := startHugeAnswerer(t, shortDir(t))
	p := New(Options{})
	p.SetBackends([]Backend{be})
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("http://lb/v2/models/m/infer")
	err := p.ServeHTTPFor(ctx, time.Now().Add(waitLimit), nil, func(*fasthttp.ResponseHeader) error { return errTooLarge })
	if !errors.Is(err, ErrAnswerRefused) {
		t.Errorf("ServeHTTPFor = %v, want ErrAnswerRefused", err)
	}
	if b := string(ctx.Response.Body()); ctx.Response.StatusCode() != fasthttp.StatusServiceUnavailable || !strings.Contains(b, errTooLarge.Error()) {
		t.Errorf("answered %d %s, want 503 with the gate's error", ctx.Response.StatusCode(), b)
	}
	recv(t, closed, "the backend to see its connection closed")
}
