package front

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/conncap"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/lb"
)

// TestClientGoneSeesTheHangUp: the Client of a request on a connection
// under the cap (lingerConn over conncap.Conn, as the public listener
// gives them) can be watched, its Gone is false while the client is
// connected, and once it closes the watch calls back and Gone is true.
func TestClientGoneSeesTheHangUp(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ln := conncap.New(raw, 4, nil)
	client, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.AcceptCapped()
	if err != nil {
		t.Fatal(err)
	}
	conn := newLingerConn(c)
	defer conn.Close()
	var ctx fasthttp.RequestCtx
	ctx.Init2(conn, nil, false)
	gone := clientGone(&ctx)
	if gone == nil {
		t.Fatal("clientGone = nil for a TCP connection under the cap: the hang-up could not be seen")
	}
	if gone.Gone() {
		t.Fatal("Gone() = true while the client is connected")
	}
	called := make(chan struct{})
	stop, err := gone.Watch(func() { close(called) })
	if err != nil {
		t.Fatalf("the client's connection cannot be watched: %v", err)
	}
	defer stop()
	client.Close()
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not call back within 5s of the client's close")
	}
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "Gone() to see the client's close", gone.Gone)
}

// TestClientGoneWithoutASocket: a connection with no socket under it
// (an in-memory pipe) cannot be asked: no Client, nothing watched.
func TestClientGoneWithoutASocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var ctx fasthttp.RequestCtx
	ctx.Init2(a, nil, false)
	if clientGone(&ctx) != nil {
		t.Error("clientGone != nil for a pipe, which has no socket to peek")
	}
}

// TestPipelinedRequestIsNotAHangUp: a client that sends its next request
// on the keep-alive connection while the first waits on a worker (the
// second's bytes then sit in the socket the polls peek at) has not hung
// up: both are answered whole and in order, and nothing counts as
// client-closed.
func TestPipelinedRequestIsNotAHangUp(t *testing.T) {
	f := startFront(t, nil)
	arrived := make(chan struct{}, 2)
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		arrived <- struct{}{}
		<-time.After(3 * lb.ClientPoll) // a run over several polls
		ctx.SetBodyString("ok-" + string(ctx.PostBody()))
	})
	c := f.dial(t)
	sendAndAwait(t, c, oneByteReq+"1", arrived)
	if _, err := io.WriteString(c, oneByteReq+"2"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, want := range []string{"ok-1", "ok-2"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer %q: %v (the request was taken for a hang-up?)", want, err)
		}
		if b := body(t, resp); resp.StatusCode != http.StatusOK || b != want {
			t.Errorf("answer %d %q, want 200 %q", resp.StatusCode, b, want)
		}
	}
	if n := f.fr.bodies.clientClosed.Load(); n != 0 {
		t.Errorf("%d requests counted client-closed, want 0: the client stayed", n)
	}
}

// oneByteReq is an inference request's head for a one-byte body.
const oneByteReq = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n"

// upstream makes h, served on a Unix socket, f's only prep worker.
func upstream(t testing.TB, f *frontHarness, h fasthttp.RequestHandler) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "up.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	up := &fasthttp.Server{Handler: h}
	go func() { _ = up.Serve(uln) }()
	t.Cleanup(func() { _ = up.Shutdown() })
	f.proxy.SetBackends([]lb.Backend{{Name: "prep-up", Socket: sock}})
}

// TestHalfClosedClientIsAnsweredNothing: a client that shuts down its
// sending side while its request waits on a worker, and goes on
// reading, is taken as gone (as nginx takes it): the worker's connection
// is closed under the request (the worker reads end of file), the client
// reads no answer, only the close of its connection, and the request is
// counted client-closed.
func TestHalfClosedClientIsAnsweredNothing(t *testing.T) {
	f := startFront(t, nil)
	arrived, saw := make(chan struct{}, 1), make(chan error, 1)
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		arrived <- struct{}{}
		_ = ctx.Conn().SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		_, err := ctx.Conn().Read(b[:])
		saw <- err
	})
	c := f.dial(t)
	sendAndAwait(t, c, oneByteReq+"1", arrived)
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c); len(b) != 0 || err != nil {
		t.Errorf("the half-closed client read %q (%v), want nothing and the connection's close", b, err)
	}
	select {
	case err := <-saw:
		if !errors.Is(err, io.EOF) {
			t.Errorf("the worker's read of its connection = %v, want EOF (the master closed it)", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the worker's connection was not closed within 5s")
	}
	if n := f.fr.bodies.clientClosed.Load(); n != 1 {
		t.Errorf("%d requests counted client-closed, want 1", n)
	}
}

// sendAndAwait writes raw on c and waits (5s at most) for arrived: its
// request has reached the worker.
func sendAndAwait(t *testing.T, c net.Conn, raw string, arrived <-chan struct{}) {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatalf("%.40q did not reach the worker within 5s", raw)
	}
}
