package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// loader sends the same request on conns connections.
type loader struct {
	url   string
	body  []byte
	conns int
	http  *http.Client
	// period counts the requests of the current reporting period, when
	// periods are reported (report); nil otherwise.
	period atomic.Pointer[result]
}

// periodLine is the JSON line printed for one reporting period: its end,
// in seconds since the load started, and what finished in it.
type periodLine struct {
	T float64 `json:"t_s"`
	summary
}

// report calls emit with each period's summary, every period, until ctx
// ends; the requests counted are those that finished in the period.
func (l *loader) report(ctx context.Context, every time.Duration, emit func(periodLine)) {
	start := time.Now()
	l.period.Store(newResult())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			emit(periodLine{T: now.Sub(start).Seconds(), summary: l.period.Swap(newResult()).summary()})
		}
	}
}

func newResult() *result { return &result{failed: map[string]int{}} }

func newLoader(url string, body []byte, conns int) *loader {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: time.Hour, DisableCompression: true}
	return &loader{url: url, body: body, conns: conns, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// result is what the connections saw.
type result struct {
	mu       sync.Mutex
	requests int
	ok       int
	failed   map[string]int
	latency  []time.Duration // of the requests answered 200
}

// run sends until ctx ends, lets the requests in flight finish (bounded
// by the client's timeout) and reports.
func (l *loader) run(ctx context.Context) *result {
	res := newResult()
	var wg sync.WaitGroup
	for range l.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				cause := l.once(context.Background())
				res.add(cause, time.Since(start))
				if p := l.period.Load(); p != nil {
					p.add(cause, time.Since(start))
				}
			}
		}()
	}
	wg.Wait()
	return res
}

// once sends one request: "" when it was answered 200, else the cause.
func (l *loader) once(ctx context.Context) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(l.body))
	if err != nil {
		return "bad request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.http.Do(req)
	if err != nil {
		return cause(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return "HTTP " + strconv.Itoa(resp.StatusCode)
	case err != nil:
		return "body cut: " + cause(err)
	}
	return ""
}

// cause names a transport error by what an operator would look for.
func cause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed before an answer"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "other: " + err.Error()
}

func (r *result) add(cause string, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if cause != "" {
		r.failed[cause]++
		return
	}
	r.ok++
	r.latency = append(r.latency, took)
}

// summary is the JSON line fleetload prints.
type summary struct {
	Requests int            `json:"requests"`
	OK       int            `json:"ok"`
	Failed   map[string]int `json:"failed"`
	P50ms    float64        `json:"p50_ms"`
	P99ms    float64        `json:"p99_ms"`
}

func (r *result) summary() summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.latency)
	return summary{Requests: r.requests, OK: r.ok, Failed: r.failed, P50ms: ms(percentile(r.latency, 50)), P99ms: ms(percentile(r.latency, 99))}
}

// percentile of sorted latencies (0 when there are none).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
