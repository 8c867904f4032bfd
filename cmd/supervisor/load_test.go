package main

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// load keeps clients sending one request each at a time until stopped,
// counting every answer that is not a 200 (transport errors included) and
// recording latencies by phase, so that a test can compare the latency
// during an event with the steady state before it.
type load struct {
	in      *instance
	path    string
	body    []byte
	stop    chan struct{}
	wg      sync.WaitGroup
	sent    atomic.Int64
	failed  atomic.Int64
	first   atomic.Value // string: the first failure
	lastBad atomic.Int64 // Unix ns when the last failure was answered
	reasons sync.Map     // failure reason ("502", "transport error") -> *atomic.Int64
	phase   atomic.Int32 // index into latencies
	mu      sync.Mutex
	latency [2][]time.Duration // steady, events
}

// Load phases.
const (
	steady int32 = iota
	events
)

// maxLoadRequests bounds each client's loop.
const maxLoadRequests = 200000

func startLoad(in *instance, clients int, path string, body []byte) *load {
	l := &load{in: in, path: path, body: body, stop: make(chan struct{})}
	for range clients {
		l.wg.Add(1)
		go l.client()
	}
	return l
}

func (l *load) client() {
	defer l.wg.Done()
	for range maxLoadRequests {
		select {
		case <-l.stop:
			return
		default:
		}
		phase := l.phase.Load()
		start := time.Now()
		code, resp, _ := l.in.post(l.path, l.body, nil)
		took := time.Since(start)
		l.sent.Add(1)
		if code != http.StatusOK {
			l.failed.Add(1)
			l.lastBad.Store(time.Now().UnixNano())
			l.first.CompareAndSwap(nil, fmt.Sprintf("status %d (0 = transport error): %s", code, resp))
			reason := fmt.Sprint(code)
			if code == 0 {
				reason = "transport error"
			}
			n, _ := l.reasons.LoadOrStore(reason, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			continue
		}
		l.mu.Lock()
		l.latency[phase] = append(l.latency[phase], took)
		l.mu.Unlock()
	}
}

// waitFor blocks until n more requests have been answered.
func (l *load) waitFor(t *testing.T, n int64) {
	t.Helper()
	target := l.sent.Load() + n
	pollUntil(t, 60*time.Second, fmt.Sprintf("%d more requests answered", n), func() bool { return l.sent.Load() >= target })
}

// finish stops the clients and fails the test if any request failed; it
// logs the totals and p99 during events ÷ steady-state p99.
func (l *load) finish(t *testing.T, what string) { l.finishAllowing(t, what, 0) }

// finishAllowing is finish for events that may fail up to allowed
// requests (those in flight on a killed worker).
func (l *load) finishAllowing(t *testing.T, what string, allowed int64) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if n := l.failed.Load(); n > allowed {
		t.Fatalf("%s: %d of %d requests failed (at most %d may), first: %v", what, n, l.sent.Load(), allowed, l.first.Load())
	}
	s, e := p99(l.latency[steady]), p99(l.latency[events])
	ratio := 0.0
	if s > 0 {
		ratio = float64(e) / float64(s)
	}
	t.Logf("%s: %d requests, %d failed (first: %v); p99 steady %s (%d requests), during events %s (%d requests), ratio %.2f",
		what, l.sent.Load(), l.failed.Load(), l.first.Load(), s, len(l.latency[steady]), e, len(l.latency[events]), ratio)
}

// failures returns the failed requests by reason.
func (l *load) failures() map[string]int64 {
	m := map[string]int64{}
	l.reasons.Range(func(k, v any) bool {
		m[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return m
}

func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99)/100]
}
