package lb

import (
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// refusingSocket leaves a socket file nobody listens on: dials get
// ECONNREFUSED.
func refusingSocket(t *testing.T, dir, name string) Backend {
	t.Helper()
	sock := filepath.Join(dir, name+".sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	return Backend{Name: name, Socket: sock}
}

func TestDialFailureRetriesElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name string
		dead func(t *testing.T, dir string) Backend
	}{
		{"refused", func(t *testing.T, dir string) Backend { return refusingSocket(t, dir, "dead") }},
		{"no-socket", func(t *testing.T, dir string) Backend {
			return Backend{Name: "dead", Socket: filepath.Join(dir, "missing.sock")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortDir(t)
			dead := tc.dead(t, dir)
			live := startBackend(t, dir, "live", nil)
			p := New(Options{})
			p.SetBackends([]Backend{dead, live.Backend})
			c := startFront(t, dir, p)

			const n = 6
			for range n {
				r := get(c, "/")
				wantOK(t, r)
				if r.backend != "live" {
					t.Fatalf("answered by %q; want live", r.backend)
				}
			}
			if live.hits.Load() != n {
				t.Errorf("live handled %d requests; want %d", live.hits.Load(), n)
			}
			ds := statsOf(p, "dead")
			if ds.Errors == 0 || ds.Errors != ds.Requests {
				t.Errorf("dead backend stats %+v; want every dispatch (at least one) counted as an error", ds)
			}
			if ls := statsOf(p, "live"); ls.Errors != 0 || ls.Requests != n {
				t.Errorf("live backend stats %+v; want %d requests, no error", ls, n)
			}
		})
	}
}

func TestAllBackendsUnreachable(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	p.SetBackends([]Backend{refusingSocket(t, dir, "d1"), refusingSocket(t, dir, "d2")})
	c := startFront(t, dir, p)
	wantJSONError(t, get(c, "/"), fasthttp.StatusServiceUnavailable)
	for _, s := range p.Stats() {
		if s.Requests != 1 || s.Errors != 1 {
			t.Errorf("stats %+v; want each backend tried exactly once", s)
		}
	}
}

func TestNoRetryAfterSend(t *testing.T) {
	dir := shortDir(t)
	arrived := make(chan string)
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	busy := startBackend(t, dir, "busy", blockingHandler("busy", arrived, gate))
	t.Cleanup(release)
	cl := startCloser(t, dir, "closer")
	p := New(Options{})
	p.SetBackends([]Backend{cl.Backend, busy.Backend})
	c := startFront(t, dir, p)

	// Load busy with one request so the closer, with none, is the least
	// loaded whatever the rotation.
	var first <-chan result
	for i := 0; first == nil; i++ {
		if i == 4 {
			t.Fatal("the busy backend never got a request")
		}
		ch := goGet(c, "/")
		select {
		case <-arrived:
			first = ch
		case r := <-ch:
			// Went to the closer first; that is the case under test anyway.
			wantJSONError(t, r, fasthttp.StatusBadGateway)
		case <-time.After(waitLimit):
			t.Fatal("timed out loading the busy backend")
		}
	}
	before := cl.requests.Load()
	wantJSONError(t, get(c, "/"), fasthttp.StatusBadGateway)
	if got := cl.requests.Load() - before; got != 1 {
		t.Errorf("closer saw %d requests; want 1 (fasthttp must not retry)", got)
	}
	if got := busy.hits.Load(); got != 1 {
		t.Errorf("busy backend saw %d requests; want only the one loading it (no retry after send)", got)
	}
	release()
	wantOK(t, recv(t, first, "the busy request"))
}

func TestUpstreamTimeoutIs504(t *testing.T) {
	dir := shortDir(t)
	arrived := make(chan string, 1)
	gate := make(chan struct{})
	slow := startBackend(t, dir, "slow", blockingHandler("slow", arrived, gate))
	t.Cleanup(func() { close(gate) })
	p := New(Options{Timeout: 200 * time.Millisecond})
	p.SetBackends([]Backend{slow.Backend})
	c := startFront(t, dir, p)
	r := get(c, "/")
	wantJSONError(t, r, fasthttp.StatusGatewayTimeout)
	recv(t, arrived, "the request to reach the slow backend")
	if s := statsOf(p, "slow"); s.Errors != 1 || s.InFlight != 0 {
		t.Errorf("slow backend stats %+v; want 1 error, 0 in flight", s)
	}
}
