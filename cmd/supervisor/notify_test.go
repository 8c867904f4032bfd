package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifySocket stands in for systemd's notification socket.
type notifySocket struct {
	path string
	msgs chan string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "sn") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	n := &notifySocket{path: filepath.Join(dir, "notify"), msgs: make(chan string, 1024)}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			select {
			case n.msgs <- string(buf[:k]):
			default: // a test that stopped reading must not block this
			}
		}
	}()
	return n
}

func (n *notifySocket) env() string { return "NOTIFY_SOCKET=" + n.path }

// expect waits for a message containing every one of lines, skipping
// others, and returns it.
func (n *notifySocket) expect(t *testing.T, lines ...string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case msg := <-n.msgs:
			if containsLines(msg, lines) {
				return msg
			}
		case <-deadline:
			t.Fatalf("no sd_notify message with %q within 60s", lines)
		}
	}
}

func containsLines(msg string, lines []string) bool {
	for _, l := range lines {
		if !strings.Contains("\n"+msg+"\n", "\n"+l) {
			return false
		}
	}
	return true
}

// TestSystemdNotifications checks what the master tells systemd: READY=1
// with a STATUS= line once serving, WATCHDOG=1 when the watchdog is on,
// RELOADING=1 with MONOTONIC_USEC= then READY=1 around a reload, and
// STOPPING=1 on SIGTERM.
func TestSystemdNotifications(t *testing.T) {
	n := listenNotify(t)
	in := startInstance(t, options{prepWorkers: 1, env: []string{n.env(), "WATCHDOG_USEC=200000"}})
	n.expect(t, "READY=1", "STATUS=serving")
	n.expect(t, "WATCHDOG=1")
	if err := in.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	n.expect(t, "RELOADING=1", "MONOTONIC_USEC=")
	n.expect(t, "READY=1")
	in.terminate(60 * time.Second)
	n.expect(t, "STOPPING=1")
}
