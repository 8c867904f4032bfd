package front

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/conncap"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// TestClientGoneSeesTheHangUp: the gone predicate of a request on a
// connection under the cap (cappedConn over conncap.Conn, as the public
// listener gives them) is false while the client is connected and
// becomes true once it closes.
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
	conn := &cappedConn{Conn: c}
	defer conn.closeNow()
	var ctx fasthttp.RequestCtx
	ctx.Init2(conn, nil, false)
	gone := clientGone(&ctx)
	if gone == nil {
		t.Fatal("clientGone = nil for a TCP connection under the cap: the hang-up could not be seen")
	}
	if gone() {
		t.Fatal("gone() = true while the client is connected")
	}
	client.Close()
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "gone() to see the client's close", gone)
}

// TestClientGoneWithoutASocket: a connection with no socket under it
// (an in-memory pipe) cannot be asked: no predicate, nothing polled.
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
