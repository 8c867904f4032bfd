package lb

import (
	"fmt"
	"sync"
	"testing"
)

func TestIdleBackendsShareRoundRobin(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	var bs []Backend
	for i := range 3 {
		bs = append(bs, startBackend(t, dir, fmt.Sprintf("b%d", i), nil).Backend)
	}
	p.SetBackends(bs)
	c := startFront(t, dir, p)

	const n = 30
	var order []string
	hits := map[string]int{}
	for range n {
		r := get(c, "/")
		wantOK(t, r)
		order = append(order, r.backend)
		hits[r.backend]++
	}
	for _, b := range bs {
		if hits[b.Name] != n/3 {
			t.Errorf("backend %s got %d of %d requests; want %d (hits %v)", b.Name, hits[b.Name], n, n/3, hits)
		}
	}
	for i := 3; i < n; i++ {
		if order[i] != order[i-3] {
			t.Fatalf("order %v is not a strict rotation", order)
		}
	}
}

func TestLeastInFlightWins(t *testing.T) {
	dir := shortDir(t)
	arrived := make(chan string)
	gate := make(chan struct{})
	mk := func(name string) Backend {
		return startBackend(t, dir, name, blockingHandler(name, arrived, gate)).Backend
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release) // runs before the servers shut down
	p := New(Options{})
	front := startFront(t, dir, p)

	inFlight := map[string]int{}
	var pending []<-chan result
	send := func() string {
		t.Helper()
		pending = append(pending, goGet(front, "/"))
		name := recv(t, arrived, "a request to reach a backend")
		inFlight[name]++
		return name
	}

	p.SetBackends([]Backend{a})
	send()
	send()
	p.SetBackends([]Backend{a, b}) // a keeps its 2 in flight
	if got := send(); got != "b" {
		t.Fatalf("with a=2 b=0 in flight, request went to %s; want b", got)
	}
	p.SetBackends([]Backend{a, b, c})
	if got := send(); got != "c" {
		t.Fatalf("with a=2 b=1 c=0 in flight, request went to %s; want c", got)
	}
	for i := range 9 {
		before := map[string]int{}
		least := inFlight["a"]
		for k, v := range inFlight {
			before[k] = v
			least = min(least, v)
		}
		if got := send(); before[got] != least {
			t.Fatalf("request %d went to %s with %d in flight; least was %d (%v)", i, got, before[got], least, before)
		}
	}
	for _, s := range p.Stats() {
		if int(s.InFlight) != inFlight[s.Name] {
			t.Errorf("Stats says %s has %d in flight; want %d", s.Name, s.InFlight, inFlight[s.Name])
		}
	}
	release()
	for _, ch := range pending {
		wantOK(t, recv(t, ch, "a released request"))
	}
}
