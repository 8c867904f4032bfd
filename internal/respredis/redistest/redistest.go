// Package redistest starts a real Redis server (Debian's redis-server) on
// a loopback port for a test, and kills it on demand.
package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// Server is a running redis-server.
type Server struct {
	URL  string // redis://127.0.0.1:PORT/0
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs redis-server without persistence on a free loopback port and
// waits until it accepts connections. It skips the test when redis-server
// is not installed (scripts/setup-test-tools installs it for make test).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server, or scripts/setup-test-tools); skipping the Redis test")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	s.URL = fmt.Sprintf("redis://%s/0", s.Addr)
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(s.Kill)
	polltest.Until(t, 10*time.Second, 20*time.Millisecond, "redis-server accepts connections", func() bool {
		c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return s
}

// Kill kills the server (SIGKILL) and waits for it to exit.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}
