package lb

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// doAllowed sends one request through p.DoAllowed and returns the backend
// that answered it.
func doAllowed(p *Proxy, allow Allow) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://lb/")
	if err := p.DoAllowed(req, resp, time.Now().Add(waitLimit), allow); err != nil {
		return "", err
	}
	return string(resp.Header.Peek("X-Backend")), nil
}

// TestDoAllowedPicksOnlyAllowed: requests go only to the backends the
// predicate accepts, shared among them; nil accepts every backend; a
// predicate that accepts none gets ErrNoBackend and reaches no backend.
func TestDoAllowedPicksOnlyAllowed(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	var tbs []*testBackend
	var bs []Backend
	for i := range 3 {
		tb := startBackend(t, dir, fmt.Sprintf("b%d", i), nil)
		tbs = append(tbs, tb)
		bs = append(bs, tb.Backend)
	}
	p.SetBackends(bs)
	notB1 := func(name string) bool { return name != "b1" }
	hits := map[string]int{}
	for range 20 {
		name, err := doAllowed(p, notB1)
		if err != nil {
			t.Fatal(err)
		}
		hits[name]++
	}
	if hits["b1"] != 0 || hits["b0"] != 10 || hits["b2"] != 10 {
		t.Fatalf("allowed b0 and b2, hits %v; want 10 each, none on b1", hits)
	}
	seen := map[string]bool{}
	for range 3 {
		name, err := doAllowed(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[name] = true
	}
	if len(seen) != 3 {
		t.Fatalf("nil predicate reached %v; want all three backends", seen)
	}
	before := tbs[0].hits.Load() + tbs[1].hits.Load() + tbs[2].hits.Load()
	if _, err := doAllowed(p, func(string) bool { return false }); !errors.Is(err, ErrNoBackend) {
		t.Fatalf("nothing allowed: %v, want ErrNoBackend", err)
	}
	if after := tbs[0].hits.Load() + tbs[1].hits.Load() + tbs[2].hits.Load(); after != before {
		t.Fatalf("nothing allowed, yet %d requests reached a backend", after-before)
	}
}

// TestDoAllowedRetriesAmongAllowed: a dial failure on the one allowed
// backend that is down moves the request to another allowed backend, never
// to a refused one.
func TestDoAllowedRetriesAmongAllowed(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	down := Backend{Name: "down", Socket: dir + "/nobody.sock"}
	up := startBackend(t, dir, "up", nil)
	refused := startBackend(t, dir, "refused", nil)
	p.SetBackends([]Backend{down, refused.Backend, up.Backend})
	for range 5 {
		name, err := doAllowed(p, func(n string) bool { return n != "refused" })
		if err != nil || name != "up" {
			t.Fatalf("answered by %q (%v); want up", name, err)
		}
	}
	if n := refused.hits.Load(); n != 0 {
		t.Fatalf("the refused backend got %d requests", n)
	}
}
