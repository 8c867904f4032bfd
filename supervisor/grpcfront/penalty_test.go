package grpcfront

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

// A connection closed for rapid reset gets its address's new
// connections refused GOAWAY ENHANCE_YOUR_CALM at accept, while the
// address's open connection and another address keep being served.
func TestRapidResetPenalisesTheAddress(t *testing.T) {
	_, addr := listen(t, Options{Handler: unreached(t), AbusePenalty: time.Minute})
	open := dialRaw(t, addr, "127.0.0.1")
	h, err := hostile.DialH2(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_ = h.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for range 4 * h2conn.EarlyEndsBurst {
		id, err := h.Open(addr, inferMethod)
		if err == nil {
			err = h.Framer.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if err != nil {
			break
		}
	}
	if _, err := h.End(0); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the resetting connection was not closed: %v", err)
	}
	refusedForPenalty(t, addr)
	if err := answersPing(open); err != nil {
		t.Errorf("the address's open connection: %v", err)
	}
	if err := answersPing(dialRaw(t, addr, "127.0.0.2")); err != nil {
		t.Errorf("another address's new connection: %v", err)
	}
}

// A connection sent GOAWAY for too many pings gets its address
// penalised as well (pingFloodTail).
func TestPingFloodPenalisesTheAddress(t *testing.T) {
	h, addr := hostileConn(t, Options{Handler: unreached(t), AbusePenalty: time.Minute})
	// Pings with no RPC open: grpc-go strikes from the second and sends
	// GOAWAY after 3 strikes, so from the fourth the server may already
	// have closed the connection (a write then fails: broken pipe).
	for i := range 6 {
		if err := h.Framer.WritePing(false, [8]byte{}); err != nil {
			if i < 4 {
				t.Fatalf("ping %d: %v", i+1, err)
			}
			break
		}
	}
	if code, debug, err := h.GoAway(); err != nil || code != http2.ErrCodeEnhanceYourCalm || debug != "too_many_pings" {
		t.Fatalf("the ping flood: GOAWAY %v %q (err %v), want gRPC's ENHANCE_YOUR_CALM too_many_pings", code, debug, err)
	}
	refusedForPenalty(t, addr)
}

// refusedForPenalty checks that a new connection to addr is refused at
// once for its address's penalty.
func refusedForPenalty(t *testing.T, addr string) {
	t.Helper()
	h, err := hostile.DialH2(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_ = h.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if code, debug, err := h.GoAway(); err != nil || code != http2.ErrCodeEnhanceYourCalm || !strings.Contains(debug, "grpc.abuse_penalty") {
		t.Errorf("a new connection of the address: GOAWAY %v %q (err %v), want ENHANCE_YOUR_CALM naming grpc.abuse_penalty", code, debug, err)
	}
}

// dialRaw opens an HTTP/2 connection to addr from the local IP from.
func dialRaw(t *testing.T, addr, from string) *http2.Framer {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from %s (no such loopback address here?): %v", from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	f := http2.NewFramer(c, c)
	if err := f.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return f
}

// answersPing pings on f and waits for the ack: nil for a served
// connection.
func answersPing(f *http2.Framer) error {
	if err := f.WritePing(false, [8]byte{1}); err != nil {
		return err
	}
	for range 100 {
		fr, err := f.ReadFrame()
		if err != nil {
			return err
		}
		if p, ok := fr.(*http2.PingFrame); ok && p.IsAck() {
			return nil
		}
	}
	return errors.New("no ping ack within 100 frames")
}
