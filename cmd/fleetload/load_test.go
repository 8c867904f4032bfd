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
// finished in it, and the periods add up to no more than the total.
func TestLoaderReportsPeriods(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 550*time.Millisecond)
	defer cancel()
	l := newLoader(srv.URL, []byte("{}"), 2)
	lines := make(chan periodLine, 100)
	go l.report(ctx, 100*time.Millisecond, func(p periodLine) { lines <- p })
	total := l.run(ctx).summary()
	sum, n := 0, 0
	for len(lines) > 0 {
		p := <-lines
		if p.T <= 0 || p.OK == 0 {
			t.Errorf("period %+v, want a time and some 200s", p)
		}
		sum += p.Requests
		n++
	}
	if n < 3 || sum > total.Requests {
		t.Errorf("%d periods with %d requests, total %d; want at least 3 periods adding up to at most the total", n, sum, total.Requests)
	}
}
