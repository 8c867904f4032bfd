package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoaderCountsFailuresByCause: 200s are counted as answered, a 503 by
// its status, a server that closes without answering and a closed port by
// their transport causes.
func TestLoaderCountsFailuresByCause(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 1:
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // closed before an answer
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s := newLoader(srv.URL, []byte("{}"), 2).run(ctx).summary()
	if s.OK == 0 || s.Failed["HTTP 503"] == 0 || s.Failed["closed before an answer"] == 0 {
		t.Fatalf("summary %+v, want 200s, 503s and closes each counted", s)
	}
	if s.Requests != s.OK+s.Failed["HTTP 503"]+s.Failed["closed before an answer"] {
		t.Errorf("summary %+v: requests is not the sum of its outcomes", s)
	}
	if s.P99ms <= 0 || s.P99ms < s.P50ms {
		t.Errorf("percentiles p50 %v p99 %v", s.P50ms, s.P99ms)
	}
}

func TestLoaderNamesARefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	if got := newLoader("http://"+addr+"/", []byte("{}"), 1).once(context.Background()); got != "connection refused" {
		t.Fatalf("cause %q, want connection refused", got)
	}
}

// TestLoaderReportsPeriods: each period's line counts the requests that
// finished in it, and the periods add up to no more than the total. The
// load runs until three lines came, not for a fixed time: how many 100ms
// ticks fit in a given time, and whether a request finished in each, is
// up to the scheduler on a busy machine.
func TestLoaderReportsPeriods(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := newLoader(srv.URL, []byte("{}"), 2)
	lines := make(chan periodLine, 1000)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		l.report(ctx, 100*time.Millisecond, func(p periodLine) { lines <- p })
	}()
	totals := make(chan summary, 1)
	go func() { totals <- l.run(ctx).summary() }()
	got := receiveLines(t, lines, 3, 30*time.Second)
	cancel()
	total := <-totals
	<-reported
	for len(lines) > 0 {
		got = append(got, <-lines)
	}
	sum, ok, last := 0, 0, 0.0
	for _, p := range got {
		if p.T <= last || p.Requests != p.OK {
			t.Errorf("period %+v after t=%v: want a later time and every request a 200", p, last)
		}
		sum, ok, last = sum+p.Requests, ok+p.OK, p.T
	}
	if ok == 0 || sum > total.Requests {
		t.Errorf("%d periods with %d requests (%d 200s), total %d; want some 200s adding up to at most the total", len(got), sum, ok, total.Requests)
	}
}

// receiveLines returns the first n lines, failing the test when they do
// not all come within d.
func receiveLines(t *testing.T, lines <-chan periodLine, n int, d time.Duration) []periodLine {
	t.Helper()
	timeout := time.After(d)
	var got []periodLine
	for len(got) < n {
		select {
		case p := <-lines:
			got = append(got, p)
		case <-timeout:
			t.Fatalf("%d period lines within %s, want %d", len(got), d, n)
		}
	}
	return got
}
