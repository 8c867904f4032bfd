package unitstop

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// silentBus is a D-Bus socket that accepts connections and never answers
// (a hung dbus-daemon). It returns its address, the count of the
// connections a client holds open on it and of those it ever accepted.
func silentBus(t *testing.T) (addr string, open, accepted *atomic.Int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bus")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	open, accepted = new(atomic.Int64), new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			open.Add(1)
			accepted.Add(1)
			go func() {
				defer open.Add(-1)
				defer c.Close()
				_, _ = io.Copy(io.Discard, c) // until the client closes it
			}()
		}
	}()
	return "unix:path=" + path, open, accepted
}

// TestSystemdOnAHungBus: under systemd, a system bus that never answers
// makes Unit fail by its context's deadline, not hang the master's start
// or reload, and leaves no connection open on the bus. As root, the
// error names the private socket (tried first; absent here) and the bus.
func TestSystemdOnAHungBus(t *testing.T) {
	addr, open, accepted := silentBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	s := Systemd{Getenv: func(k string) string {
		if k == "INVOCATION_ID" {
			return "0123456789abcdef"
		}
		return ""
	}}
	const bound = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	_, err := s.Unit(ctx)
	took := time.Since(start)
	if err == nil || errors.Is(err, ErrNotUnderSystemd) || accepted.Load() == 0 {
		t.Fatalf("Unit on a bus that never answers = %v after %d connections to it, want a D-Bus error after one", err, accepted.Load())
	}
	if os.Geteuid() == 0 && !strings.Contains(err.Error(), "/run/systemd/private") ||
		!strings.Contains(err.Error(), "the system bus") {
		t.Errorf("Unit's error %q does not name what it tried (the private socket as root, then the system bus)", err)
	}
	if took > bound+2*time.Second {
		t.Errorf("Unit on a bus that never answers took %s, want about its context's %s", took, bound)
	}
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the connections to the hung bus are closed", func() bool {
		return open.Load() == 0
	})
}
