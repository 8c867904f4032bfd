package lb

import (
	"fmt"
	"sync"
	"testing"
)

func TestSwapUnderLoadLosesNothing(t *testing.T) {
	dir := shortDir(t)
	var all []Backend
	var servers []*testBackend
	for i := range 4 {
		tb := startBackend(t, dir, fmt.Sprintf("s%d", i), nil)
		servers = append(servers, tb)
		all = append(all, tb.Backend)
	}
	pools := [][]Backend{
		{all[0], all[1], all[2]},
		{all[1], all[2], all[3]},
		{all[3], all[0]},
		{all[2]},
		{all[0], all[1], all[2], all[3]},
	}
	p := New(Options{})
	p.SetBackends(pools[0])
	c := startFront(t, dir, p)

	const workers, perWorker = 8, 150
	errs := make(chan error, workers*perWorker)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range perWorker {
				if r := get(c, "/"); r.err != nil || r.status != 200 {
					errs <- fmt.Errorf("status %d err %v body %q", r.status, r.err, r.body)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Swap as fast as possible, bounded in count, while the load runs.
	const maxSwaps = 5000
	swaps := 0
	for ; swaps < maxSwaps && !isClosed(done); swaps++ {
		p.SetBackends(pools[swaps%len(pools)])
	}
	recv(t, done, "the load to finish")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, s := range p.Stats() {
		if s.InFlight != 0 || s.Errors != 0 {
			t.Errorf("after load, stats %+v; want nothing in flight, no error", s)
		}
	}
	var handled int64
	for _, tb := range servers {
		handled += tb.hits.Load()
	}
	if handled != workers*perWorker {
		t.Errorf("backends handled %d requests; want %d (one per request)", handled, workers*perWorker)
	}
	t.Logf("%d swaps during %d requests", swaps, workers*perWorker)
}

func TestIdleWaitsForRemovedBackend(t *testing.T) {
	dir := shortDir(t)
	arrived := make(chan string)
	gate := make(chan struct{})
	old := startBackend(t, dir, "old", blockingHandler("old", arrived, gate))
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	repl := startBackend(t, dir, "new", nil)
	p := New(Options{})
	p.SetBackends([]Backend{old.Backend})
	c := startFront(t, dir, p)

	if ch := p.Idle("nobody"); !isClosed(ch) {
		t.Error("Idle of an unknown name is not closed")
	}
	if ch := p.Idle("old"); !isClosed(ch) {
		t.Error("Idle of a backend with nothing in flight is not closed")
	}

	inflight := goGet(c, "/")
	recv(t, arrived, "the request to reach the old backend")
	oldB := p.known["old"]
	p.SetBackends([]Backend{repl.Backend}) // surge first: new is ready, retire old
	idle := p.Idle("old")
	if isClosed(idle) {
		t.Fatal("Idle closed while a request is in flight on the removed backend")
	}
	if s := statsOf(p, "old"); s.InFlight != 1 {
		t.Errorf("draining backend stats %+v; want 1 in flight", s)
	}
	for range 3 {
		if r := get(c, "/"); r.backend != "new" {
			t.Fatalf("request after removal answered by %q (status %d); want new", r.backend, r.status)
		}
	}
	if isClosed(idle) {
		t.Fatal("Idle closed before the in-flight request finished")
	}
	release()
	wantOK(t, recv(t, inflight, "the draining request"))
	recv(t, idle, "Idle of the drained backend")
	if n := oldB.client.ConnsCount(); n != 0 {
		t.Errorf("drained backend still has %d connections; want 0", n)
	}
	p.SetBackends([]Backend{repl.Backend})
	if _, ok := p.known["old"]; ok {
		t.Error("drained backend still known after the next SetBackends")
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
