package grpcfront

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// A client that connects and never sends the HTTP/2 preface holds a place
// under MaxConnections only until HandshakeTimeout: the connection is
// closed, and a new one is served in its place.
func TestSilentConnectionGivesItsPlaceBack(t *testing.T) {
	_, addr := listen(t, Options{Handler: unreached(t), MaxConnections: 1, HandshakeTimeout: 300 * time.Millisecond})
	silent, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start := time.Now()
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, silent); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection that sent nothing was still open after 10s (HandshakeTimeout 300ms)")
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("the silent connection was closed after %v, before HandshakeTimeout (300ms): was it refused over the cap?", took)
	}
	h, err := hostile.DialH2(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_ = h.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := answersPing(h.Framer); err != nil {
		t.Fatalf("the connection after the silent one was closed (MaxConnections 1): %v, want it served", err)
	}
}

// A connection that opens no RPC is sent GOAWAY after IdleTimeout and
// closed, so idle clients cannot hold the connection cap. This client
// does not answer the GOAWAY's ping, so gRPC closes it only after its own
// wait for the ack (about 6s here), hence the 20s bound.
func TestIdleConnectionIsClosed(t *testing.T) {
	h, _ := hostileConn(t, Options{Handler: unreached(t), IdleTimeout: 300 * time.Millisecond})
	start := time.Now()
	if _, _, err := h.GoAway(); err != nil {
		t.Fatalf("a connection with no RPC got no GOAWAY (IdleTimeout 300ms): %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the idle connection got GOAWAY after %v, IdleTimeout is 300ms", took)
	}
	_ = h.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, h.Conn); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("the idle connection stayed open 20s after its GOAWAY")
	}
}
