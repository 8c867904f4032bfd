package front

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
)

// These tests send mapped bodies (2 MiB, over the production
// mappedBodyMin) down the lb's retry and timeout paths: a body used after
// finish unmapped it would crash the test binary, not fail an assertion.

func bigRequest(n int, extra string) string {
	return fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s", extra, n, strings.Repeat("m", n))
}

// TestMappedBodyRetried: a body is resent, whole, to the next backend
// after a dial failure, and freed once answered.
func TestMappedBodyRetried(t *testing.T) {
	f := startFront(t, nil)
	dead := lb.Backend{Name: "prep-dead", Socket: filepath.Join(t.TempDir(), "none.sock")}
	f.proxy.SetBackends([]lb.Backend{dead, {Name: "prep-0", Socket: f.sock}})
	const n = 2 << 20
	for i := range 4 {
		resp := f.exchange(t, f.dial(t), bigRequest(n, ""))
		if b := body(t, resp); resp.StatusCode != 200 || b != strconv.Itoa(n) {
			t.Fatalf("request %d: %d %q, want 200 and %d bytes upstream", i, resp.StatusCode, b, n)
		}
	}
	if s := statsOf(f, dead.Name); s.Errors == 0 {
		t.Fatalf("the dead backend was never tried (stats %+v): the retry path was not exercised", s)
	}
	f.waitBudgetEmpty(t)
}

// TestMappedBodyUpstreamTimeout: an upstream that never reads the body
// makes the master's write block until the client's deadline; the request
// is answered 5xx, the body freed, and the master keeps serving.
func TestMappedBodyUpstreamTimeout(t *testing.T) {
	f := startFront(t, nil)
	sock := filepath.Join(t.TempDir(), "stuck.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	accepted := make(chan net.Conn, 16)
	go func() {
		for range 16 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never read
		}
	}()
	good := f.sock
	f.proxy.SetBackends([]lb.Backend{{Name: "prep-stuck", Socket: sock}})
	const n = 4 << 20
	resp := f.exchange(t, f.dial(t), bigRequest(n, admission.TimeoutHeader+": 300ms\r\n"))
	if b := body(t, resp); resp.StatusCode != 504 && resp.StatusCode != 503 {
		t.Fatalf("a body to an upstream that never reads it: %d %q, want 504 (or 503)", resp.StatusCode, b)
	}
	for len(accepted) > 0 {
		held = append(held, <-accepted)
	}
	f.waitBudgetEmpty(t)
	f.proxy.SetBackends([]lb.Backend{{Name: "prep-0", Socket: good}})
	resp = f.exchange(t, f.dial(t), bigRequest(n, ""))
	if b := body(t, resp); resp.StatusCode != 200 || b != strconv.Itoa(n) {
		t.Fatalf("after the timeout: %d %q, want 200 and %d bytes upstream", resp.StatusCode, b, n)
	}
	f.waitBudgetEmpty(t)
}

func statsOf(f *frontHarness, name string) lb.BackendStats {
	for _, s := range f.proxy.Stats() {
		if s.Name == name {
			return s
		}
	}
	return lb.BackendStats{}
}
