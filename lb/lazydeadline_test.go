package lb

import (
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// countingConn counts the deadlines set on a real connection.
type countingConn struct {
	net.Conn
	sets atomic.Int64
}

func (c *countingConn) SetReadDeadline(t time.Time) error {
	c.sets.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c *countingConn) SetWriteDeadline(t time.Time) error {
	c.sets.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// unixPair is a connected pair of Unix sockets, closed with the test.
func unixPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(shortDir(t), "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = recv(t, accepted, "the accepted connection")
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestLazyDeadlineSkipsReArms: a deadline asked request after request as
// "now plus the timeout" is armed once per slack, not once per ask.
func TestLazyDeadlineSkipsReArms(t *testing.T) {
	raw, _ := unixPair(t)
	counted := &countingConn{Conn: raw}
	c := &lazyDeadlineConn{Conn: counted}
	start := time.Now()
	const asks = 1000
	for range asks {
		if err := c.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	// Each direction re-arms at most once per elapsed second (the slack
	// of a one-minute deadline), plus its first arming.
	most := 2 * (1 + int64(time.Since(start)/maxDeadlineSlack))
	if got := counted.sets.Load(); got > most {
		t.Errorf("%d deadlines set on the connection for %d asks in %v; want at most %d", got, 2*asks, time.Since(start), most)
	}
	// Clearing is never skipped.
	before := counted.sets.Load()
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := counted.sets.Load() - before; got != 2 {
		t.Errorf("clearing both deadlines set %d on the connection; want 2", got)
	}
}

// TestLazyDeadlineStalledReadTimesOut: a read that stalls still times out
// no earlier than asked and within the slack, both when a shorter
// deadline follows a far one (re-armed) and when the ask is covered by
// the one armed just before (skipped).
func TestLazyDeadlineStalledReadTimesOut(t *testing.T) {
	raw, _ := unixPair(t)
	counted := &countingConn{Conn: raw}
	c := &lazyDeadlineConn{Conn: counted}
	if err := c.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	const d = 160 * time.Millisecond // slack: 10 ms
	stall := func(step string, asked time.Time) {
		t.Helper()
		_, err := c.Read(make([]byte, 1))
		fired := time.Now()
		if !isTimeout(err) {
			t.Fatalf("%s: stalled read returned %v; want a timeout", step, err)
		}
		if fired.Before(asked) {
			t.Errorf("%s: timed out %v before the deadline asked", step, asked.Sub(fired))
		}
		// The slack, plus a generous margin for a loaded machine.
		if late := fired.Sub(asked); late > d/16+waitLimit/10 {
			t.Errorf("%s: timed out %v after the deadline asked", step, late)
		}
	}

	before := counted.sets.Load()
	asked := time.Now().Add(d)
	if err := c.SetReadDeadline(asked); err != nil {
		t.Fatal(err)
	}
	if counted.sets.Load() == before {
		t.Error("a deadline shorter than the armed one was not armed")
	}
	stall("shorter than the armed one", asked)

	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	before = counted.sets.Load()
	asked = time.Now().Add(d)
	if err := c.SetReadDeadline(asked); err != nil {
		t.Fatal(err)
	}
	if counted.sets.Load() != before && time.Until(asked) > d-d/32 {
		t.Error("a deadline the armed one covers was armed again")
	}
	stall("covered by the armed one", asked)
}

// TestUpstreamTimeoutOnReusedConnection: an upstream that stalls on a
// pooled connection whose deadlines an earlier exchange armed (so that
// this one's ask is skipped) is still timed out, no earlier than the
// proxy's timeout and within its slack, watched or not.
func TestUpstreamTimeoutOnReusedConnection(t *testing.T) {
	dir := shortDir(t)
	arrived := make(chan string, 2)
	gate := make(chan struct{})
	slow := startBackend(t, dir, "slow", func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) != "/stall" {
			ctx.SetBodyString("fast")
			return
		}
		blockingHandler("slow", arrived, gate)(ctx)
	})
	t.Cleanup(func() { close(gate) })
	const timeout = 400 * time.Millisecond
	p := New(Options{Timeout: timeout})
	p.SetBackends([]Backend{slow.Backend})
	do := func(path string, client Client) (time.Duration, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://lb" + path)
		start := time.Now()
		// The request's own deadline is far: the backend's read
		// timeout (the proxy's) is what bounds the stall.
		err := p.DoRouteFor(req, resp, time.Now().Add(waitLimit), nil, client, nil)
		return time.Since(start), err
	}
	for _, client := range []Client{nil, GoneFunc(func() bool { return false })} {
		if _, err := do("/", client); err != nil {
			t.Fatalf("client %v: fast request: %v", client, err)
		}
		took, err := do("/stall", client)
		if !isTimeout(err) {
			t.Fatalf("client %v: stalled upstream returned %v; want a timeout", client, err)
		}
		if took < timeout {
			t.Errorf("client %v: timed out after %v; want no earlier than the timeout %v", client, took, timeout)
		}
		if took > timeout+timeout/16+waitLimit/10 {
			t.Errorf("client %v: timed out after %v; want within the timeout %v and its slack", client, took, timeout)
		}
		recv(t, arrived, "the request to reach the slow backend")
	}
}
