package metrics

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/listenstop"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// serveLoopback serves a metrics listener on a loopback port; the
// caller closes it.
func serveLoopback(t *testing.T) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms := New(ln, fakeMaster{config.DefaultConfig().Metrics}, nil, zerolog.Nop())
	ms.Serve()
	return ms, ln.Addr().String()
}

// TestCloseNotHeldBySilentClient: a client that connects to the metrics
// listener and sends half a request, then nothing, does not hold the
// master's stop (Close runs on its way out) for the server's idle window.
func TestCloseNotHeldBySilentClient(t *testing.T) {
	ms, addr := serveLoopback(t)
	c, err := net.Dial("tcp", addr)
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

// statusLine sends a request on a new connection to addr and returns the
// answer's first line.
func statusLine(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestConnectionFloodIsCapped: idle connections to the metrics listener
// hold at most maxConns places; one more is answered 503 at once, so a
// flood cannot take the master's file descriptors (and with them the
// public listener's accepts). A place given back is taken again.
func TestConnectionFloodIsCapped(t *testing.T) {
	ms, addr := serveLoopback(t)
	defer ms.Close()
	idle := make([]net.Conn, 0, maxConns)
	for range maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, "the server to take every idle connection",
		func() bool { return ms.srv.GetOpenConnectionsCount() == maxConns })
	if got := statusLine(t, addr); !strings.HasPrefix(got, "HTTP/1.1 503") {
		t.Fatalf("a connection beside %d idle ones: %q, want 503", maxConns, got)
	}
	idle[0].Close()
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, "a place given back",
		func() bool { return ms.srv.GetOpenConnectionsCount() == maxConns-1 })
	if got := statusLine(t, addr); strings.HasPrefix(got, "HTTP/1.1 503") || !strings.HasPrefix(got, "HTTP/1.1 ") {
		t.Fatalf("a connection once one idle one closed: %q, want an answer from the server", got)
	}
}

// TestServeLogsAListenerThatFails: when the listening socket stops
// accepting under the server (shut down through another descriptor, as
// an upgraded-away master once did to its successor's: issue 27), the
// master logs it at error level, which scripts/log-errors and the
// operations matrix catch; a Close logs nothing of the kind.
func TestServeLogsAListenerThatFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dupFile, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer dupFile.Close()
	dup, err := net.FileListener(dupFile)
	if err != nil {
		t.Fatal(err)
	}
	defer dup.Close()
	var log lockedLog
	ms := New(ln, fakeMaster{config.DefaultConfig().Metrics}, nil, zerolog.New(&log))
	ms.Serve()
	if got := statusLine(t, ln.Addr().String()); !strings.Contains(got, " 404 ") {
		t.Fatalf("before the shutdown: %q, want 404", got)
	}
	if err := listenstop.Shutdown(dup); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 5*time.Second, 5*time.Millisecond, "an error-level line saying the metrics listener failed", func() bool {
		s := log.String()
		return strings.Contains(s, `"level":"error"`) && strings.Contains(s, "metrics listener failed")
	})
	ms.Close()

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var quiet lockedLog
	ms = New(ln2, fakeMaster{config.DefaultConfig().Metrics}, nil, zerolog.New(&quiet))
	ms.Serve()
	ms.Close()
	if s := quiet.String(); strings.Contains(s, `"level":"error"`) {
		t.Errorf("a Close logged an error: %s", s)
	}
}

// lockedLog is a log sink the server's goroutines write while the test
// reads it.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
