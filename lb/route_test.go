package lb

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// doRoute sends one request through p.DoRoute and returns the backend
// that answered it.
func doRoute(p *Proxy, route *Route) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://lb/")
	if err := p.DoRoute(req, resp, time.Now().Add(waitLimit), route); err != nil {
		return "", err
	}
	return string(resp.Header.Peek("X-Backend")), nil
}

// TestDoRoutePicksOnlyAllowed: requests go only to the backends the
// predicate accepts, shared among them; nil accepts every backend; a
// predicate that accepts none gets ErrNoBackend and reaches no backend.
func TestDoRoutePicksOnlyAllowed(t *testing.T) {
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
	notB1 := NewRoute(func(name string) bool { return name != "b1" })
	hits := map[string]int{}
	for range 20 {
		name, err := doRoute(p, notB1)
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
		name, err := doRoute(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[name] = true
	}
	if len(seen) != 3 {
		t.Fatalf("nil predicate reached %v; want all three backends", seen)
	}
	before := tbs[0].hits.Load() + tbs[1].hits.Load() + tbs[2].hits.Load()
	if _, err := doRoute(p, NewRoute(func(string) bool { return false })); !errors.Is(err, ErrNoBackend) {
		t.Fatalf("nothing allowed: %v, want ErrNoBackend", err)
	}
	if after := tbs[0].hits.Load() + tbs[1].hits.Load() + tbs[2].hits.Load(); after != before {
		t.Fatalf("nothing allowed, yet %d requests reached a backend", after-before)
	}
}

// TestDoRouteRetriesAmongAllowed: a dial failure on the one allowed
// backend that is down moves the request to another allowed backend, never
// to a refused one.
func TestDoRouteRetriesAmongAllowed(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	down := Backend{Name: "down", Socket: dir + "/nobody.sock"}
	up := startBackend(t, dir, "up", nil)
	refused := startBackend(t, dir, "refused", nil)
	p.SetBackends([]Backend{down, refused.Backend, up.Backend})
	route := NewRoute(func(n string) bool { return n != "refused" })
	for range 5 {
		name, err := doRoute(p, route)
		if err != nil || name != "up" {
			t.Fatalf("answered by %q (%v); want up", name, err)
		}
	}
	if n := refused.hits.Load(); n != 0 {
		t.Fatalf("the refused backend got %d requests", n)
	}
}

// TestRoutesRotateIndependently: requests of two routes over the same two
// idle backends, interleaved one by one, each alternate between both
// backends; with one shared rotation each route would see every other
// start and stick to one backend.
func TestRoutesRotateIndependently(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	p.SetBackends([]Backend{startBackend(t, dir, "b0", nil).Backend, startBackend(t, dir, "b1", nil).Backend})
	all := func(string) bool { return true }
	routes := []*Route{NewRoute(all), NewRoute(all)}
	hits := [2]map[string]int{{}, {}}
	for range 10 {
		for i, r := range routes {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI("http://lb/")
			if err := p.DoRoute(req, resp, time.Now().Add(waitLimit), r); err != nil {
				t.Fatal(err)
			}
			hits[i][string(resp.Header.Peek("X-Backend"))]++
			fasthttp.ReleaseRequest(req)
			fasthttp.ReleaseResponse(resp)
		}
	}
	for i, h := range hits {
		if h["b0"] != 5 || h["b1"] != 5 {
			t.Errorf("route %d: hits %v, want 5 on each backend", i, h)
		}
	}
}
