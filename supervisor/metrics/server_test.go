package metrics

import (
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// TestCloseNotHeldBySilentClient: a client that connects to the metrics
// listener and sends half a request, then nothing, does not hold the
// master's stop (Close runs on its way out) for the server's idle window.
func TestCloseNotHeldBySilentClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms := New(ln, fakeMaster{config.DefaultConfig().Metrics}, nil, zerolog.Nop())
	ms.Serve()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: 127.0")); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, "the server to take the silent connection",
		func() bool { return ms.srv.GetOpenConnectionsCount() == 1 })
	start := time.Now()
	ms.Close()
	if took := time.Since(start); took > closeGrace+time.Second {
		t.Errorf("Close took %s with a silent client connected, want at most %s", took, closeGrace)
	}
}
