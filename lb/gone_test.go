package lb

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/hangup"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// hangupHandler tells arrived that a request came, then blocks reading
// the request's connection until its peer closes it (or waitLimit) and
// sends what the read returned to saw.
func hangupHandler(arrived chan<- struct{}, saw chan<- error) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		arrived <- struct{}{}
		_ = ctx.Conn().SetReadDeadline(time.Now().Add(waitLimit))
		var b [1]byte
		_, err := ctx.Conn().Read(b[:])
		saw <- err
	}
}

// doFor sends a POST through p.DoRouteFor on its own goroutine.
func doFor(p *Proxy, gone func() bool) <-chan error {
	ch := make(chan error, 1)
	go func() {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI("http://lb/v2/models/m/infer")
		err := p.DoRouteFor(req, resp, time.Now().Add(waitLimit), nil, polled(gone), nil)
		if err == nil && resp.StatusCode() != fasthttp.StatusOK {
			err = errors.New("answered " + resp.String())
		}
		ch <- err
	}()
	return ch
}

// TestGoneClosesTheUpstreamConnection: once the caller's gone reports
// true, the request's upstream connection is closed (the backend reads
// end of file, as a worker's PeerClosed does), DoRouteFor returns
// ErrClientGone within a few polls, no other backend is tried, and the
// proxy goes on serving.
func TestGoneClosesTheUpstreamConnection(t *testing.T) {
	dir := shortDir(t)
	arrived, saw := make(chan struct{}, 2), make(chan error, 2)
	a := startBackend(t, dir, "a", hangupHandler(arrived, saw))
	b := startBackend(t, dir, "b", hangupHandler(arrived, saw))
	p := New(Options{})
	p.SetBackends([]Backend{a.Backend, b.Backend})
	var gone atomic.Bool
	done := doFor(p, gone.Load)
	recv(t, arrived, "the request to reach a backend")
	gone.Store(true)
	start := time.Now()
	err := recv(t, done, "DoRouteFor to return")
	took := time.Since(start)
	if !errors.Is(err, ErrClientGone) {
		t.Fatalf("DoRouteFor = %v, want ErrClientGone", err)
	}
	// One poll is ClientPoll; the margin is for a loaded -race run.
	if took > 20*ClientPoll {
		t.Errorf("DoRouteFor returned %s after the client went, want within a few polls of %s", took, ClientPoll)
	}
	if err := recv(t, saw, "the backend to see the hang-up"); !errors.Is(err, io.EOF) {
		t.Errorf("the backend's read of its connection = %v, want EOF (the proxy closed it)", err)
	}
	if hits := a.hits.Load() + b.hits.Load(); hits != 1 {
		t.Errorf("backends got %d requests, want 1: an abandoned request is not retried", hits)
	}
	t.Logf("abandoned %s after the client went", took)
	okBackend := startBackend(t, dir, "ok", okHandler)
	p.SetBackends([]Backend{okBackend.Backend})
	if err := recv(t, doFor(p, func() bool { return false }), "a later request"); err != nil {
		t.Fatalf("a later request: %v", err)
	}
}

// TestWatchedRequestWhoseClientStaysIsAnswered: a request slower than
// several polls whose client stays is answered whole, and its
// connection goes back to the pool for the next request.
func TestWatchedRequestWhoseClientStaysIsAnswered(t *testing.T) {
	dir := shortDir(t)
	conns := make(chan uint64, 2)
	be := startBackend(t, dir, "slow", func(ctx *fasthttp.RequestCtx) {
		conns <- ctx.ConnID()
		<-time.After(4 * ClientPoll) // a slow model run
		ctx.SetBodyString("ok")
	})
	p := New(Options{})
	p.SetBackends([]Backend{be.Backend})
	var polls atomic.Int64
	gone := func() bool { polls.Add(1); return false }
	for i := range 2 {
		if err := recv(t, doFor(p, gone), "a slow request"); err != nil {
			t.Fatalf("slow request %d: %v", i, err)
		}
	}
	if n := polls.Load(); n < 2 {
		t.Errorf("gone was polled %d times over two requests of %s, want at least 2 (every %s)", n, 4*ClientPoll, ClientPoll)
	}
	if first, second := <-conns, <-conns; first != second {
		t.Errorf("the requests came on connections %d and %d, want one: a watched request's connection is pooled again", first, second)
	}
}

// BenchmarkWatch is what a request pays for being watched when its
// answer comes before any hang-up: DoRouteFor with a polled Client
// (an entry on the watch clock added and removed) and with a watched one (hangup.Peer on a
// connected loopback socket of its own per goroutine: two epoll_ctl
// calls) against DoRoute, to the same trivial backend over a Unix socket.
func BenchmarkWatch(b *testing.B) {
	dir := shortDir(b)
	benchmarkWatch(b, startBackend(b, dir, "bench", okHandler), watchClients)
}

// BenchmarkWatchSlow is BenchmarkWatch for requests answered after 3 ms
// (an MLP request with 32 in flight on a 2-core box), with the CPU time
// the process (client, proxy, backend) spent per request as cpu-ns/op:
// with watchDelay at 1 ms each such request also paid the epoll
// registration and its removal, about 20% more master CPU per request
// at 32 in flight (scripts/bench-grpc, MODELS=mlp CONC=32).
func BenchmarkWatchSlow(b *testing.B) {
	dir := shortDir(b)
	be := startBackend(b, dir, "bench", func(ctx *fasthttp.RequestCtx) {
		<-time.After(3 * time.Millisecond) // the model's run
		ctx.SetBodyString("ok")
	})
	benchmarkWatch(b, be, []watchClient{watchClients[0], watchClients[2]})
}

// watchClient makes a benchmark goroutine's Client; gate, if not nil,
// is the requests' answer gate.
type watchClient struct {
	name   string
	client func(b *testing.B) Client
	gate   AnswerGate
}

// watchClients are the Clients BenchmarkWatch compares.
var watchClients = []watchClient{
	{"unwatched", func(*testing.B) Client { return nil }, nil},
	{"watched", func(*testing.B) Client { return GoneFunc(func() bool { return false }) }, nil},
	{"event", func(b *testing.B) Client { return hangup.Peer{Conn: loopbackConn(b)} }, nil},
	// gated takes the watched requests' transport (roundTrip, the map
	// entry) with no watch: what the watch itself costs is watched
	// minus gated.
	{"gated", func(*testing.B) Client { return nil }, func(*fasthttp.ResponseHeader) error { return nil }},
}

// benchmarkWatch runs DoRouteFor to be with each of clients, 16
// goroutines a P, and reports the process's CPU time per request.
func benchmarkWatch(b *testing.B, be *testBackend, clients []watchClient) {
	p := New(Options{})
	p.SetBackends([]Backend{be.Backend})
	for _, c := range clients {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(16)
			start, arms := cpuTime(b), deadlinesArmed.Load()
			b.RunParallel(func(pb *testing.PB) {
				client := c.client(b)
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod(fasthttp.MethodPost)
				req.SetRequestURI("http://lb/v2/models/m/infer")
				for pb.Next() {
					if err := p.DoRouteFor(req, resp, time.Now().Add(waitLimit), nil, client, c.gate); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(deadlinesArmed.Load()-arms)/float64(b.N), "deadline-arms/op")
		})
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopbackConn is the accepting side of a loopback TCP connection whose
// peer stays, closed with the benchmark.
func loopbackConn(b *testing.B) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(); s.Close() })
	return s
}

// TestServeHTTPForAnswersNothingToAGoneClient: a client that shuts down
// its side while its request waits (gone then reports true) reads no
// response at all, only the close of its connection, and the handler is
// left with status 499 for its log.
func TestServeHTTPForAnswersNothingToAGoneClient(t *testing.T) {
	dir := shortDir(t)
	arrived, saw := make(chan struct{}, 1), make(chan error, 1)
	be := startBackend(t, dir, "a", hangupHandler(arrived, saw))
	p := New(Options{})
	p.SetBackends([]Backend{be.Backend})
	var gone atomic.Bool
	statuses := make(chan int, 1)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		err := p.ServeHTTPFor(ctx, time.Time{}, GoneFunc(gone.Load), nil)
		if !errors.Is(err, ErrClientGone) {
			t.Errorf("ServeHTTPFor = %v, want ErrClientGone", err)
		}
		statuses <- ctx.Response.StatusCode()
	}}
	server, client := net.Pipe()
	go func() { _ = srv.ServeConn(server) }()
	defer client.Close()
	if _, err := client.Write([]byte("POST /v2/models/m/infer HTTP/1.1\r\nHost: lb\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	recv(t, arrived, "the request to reach the backend")
	gone.Store(true)
	if got := recv(t, statuses, "the handler to return"); got != StatusClientClosedRequest {
		t.Errorf("status left for the log = %d, want %d", got, StatusClientClosedRequest)
	}
	_ = client.SetReadDeadline(time.Now().Add(waitLimit))
	if b, err := io.ReadAll(client); len(b) != 0 || err != nil {
		t.Errorf("the gone client read %q (%v), want nothing and the connection's close", b, err)
	}
	recv(t, saw, "the backend to see the hang-up")
}

// TestWatchEndsWhenTheExchangePanics: a panic inside DoRouteFor (here a
// route's predicate; fasthttp's, as send allows for) still ends the
// request's watch and forgets it. Left behind, the watch would poll the
// gone client for ever, and the request object, which its server pools
// and reuses for the next request on that connection, would be sent
// through it: that next request refused (ErrClientGone) or its upstream
// connection closed when the previous client hangs up.
func TestWatchEndsWhenTheExchangePanics(t *testing.T) {
	p := New(Options{})
	// Nothing serves it: the panic comes before any dial.
	p.SetBackends([]Backend{{Name: "a", Socket: filepath.Join(shortDir(t), "a.sock")}})
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://lb/v2/models/m/infer")
	var w *watch
	route := NewRoute(func(string) bool {
		if u, ok := p.exchanges.Load(req); ok {
			w = u.w
		}
		panic("a route's predicate panics")
	})
	func() {
		defer func() { _ = recover() }()
		_ = p.DoRouteFor(req, resp, time.Now().Add(waitLimit), route, GoneFunc(func() bool { return false }), nil)
		t.Fatal("DoRouteFor returned; want its panic")
	}()
	if w == nil {
		t.Fatal("the route's predicate found no watch for the request")
	}
	if _, ok := p.exchanges.Load(req); ok {
		t.Error("the request's watch is still in the proxy's map after the panic: the next request on this object would be sent through it")
	}
	w.mu.Lock()
	ended := w.ended
	w.mu.Unlock()
	if !ended {
		t.Error("the watch was not ended by the panic: it goes on polling its gone predicate")
	}
}

// TestWatchFiringAtTheAnswerSparesThePool: watched requests whose
// client has gone from the start, answered at about the moment of the
// first poll (some just before it, some just after), share one pool with
// quick unwatched requests. Whichever comes first, a watch closes only
// the connection its own exchange holds: every unwatched request is
// answered (none has its pooled connection closed under it), and the
// only failed exchanges are the abandoned ones (a connection a watch
// closed and the pool then handed out again would fail its write and
// count one more).
func TestWatchFiringAtTheAnswerSparesThePool(t *testing.T) {
	dir := shortDir(t)
	be := startBackend(t, dir, "a", func(ctx *fasthttp.RequestCtx) {
		if d := ctx.QueryArgs().GetUintOrZero("us"); d > 0 {
			<-time.After(time.Duration(d) * time.Microsecond) // a run ending about a poll
		}
		ctx.SetBodyString("ok")
	})
	p := New(Options{})
	p.SetBackends([]Backend{be.Backend})
	const watchers, each = 3, 8
	var gone, answered atomic.Int64
	errs := make(chan error, watchers*each+1)
	done := make(chan struct{}, watchers)
	for i := range watchers {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range each {
				// From 2 ms before the first poll to 1 ms after it; the
				// last well after it, so that some watch fires first
				// however late a loaded machine runs its timers.
				us := ClientPoll.Microseconds() - 2000 + int64(i*each+j)*3000/(watchers*each)
				if j == each-1 {
					us = 3 * ClientPoll.Microseconds()
				}
				err := sendTo(p, fmt.Sprintf("http://lb/slow?us=%d", us), func() bool { return true })
				switch {
				case err == nil:
					answered.Add(1)
				case errors.Is(err, ErrClientGone):
					gone.Add(1)
				default:
					errs <- fmt.Errorf("watched request answered in %d us: %w", us, err)
				}
			}
		}()
	}
	quick, start := 0, time.Now()
	for finished := 0; finished < watchers; quick++ {
		select {
		case <-done:
			finished++
		default:
		}
		if quick >= 1<<20 || time.Since(start) > waitLimit {
			t.Fatalf("the watched requests did not finish within %s and %d quick requests", waitLimit, quick)
		}
		if err := sendTo(p, "http://lb/quick", nil); err != nil {
			t.Fatalf("quick unwatched request %d: %v (a watch closed its pooled connection?)", quick, err)
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := statsOf(p, "a")
	t.Logf("%d watched answered, %d abandoned; %d quick unwatched; backend errors %d", answered.Load(), gone.Load(), quick, st.Errors)
	if st.Errors != uint64(gone.Load()) {
		t.Errorf("the backend counts %d failed exchanges, want %d (one per abandoned request): a connection a watch closed was used again", st.Errors, gone.Load())
	}
	if gone.Load() == 0 {
		t.Error("no watched request was abandoned, not even those answered three polls late")
	}
}

// sendTo sends a POST to uri through p.DoRouteFor with gone (nil:
// unwatched) and returns its error, or one for an answer other than 200.
func sendTo(p *Proxy, uri string, gone func() bool) error {
	return sendToClient(p, uri, polled(gone))
}

// polled is gone as a Client that can only be polled, nil for nil.
func polled(gone func() bool) Client {
	if gone == nil {
		return nil
	}
	return GoneFunc(gone)
}

// TestRoundTripCoversTheBackendsClient: roundTrip, fasthttp's exchange
// redone with the connection in hand, leaves out what the backends'
// clients do not use (streamed responses, MaxConnDuration, header names
// as sent). A client that came to use one would have its watched
// requests served differently from the others, silently.
func TestRoundTripCoversTheBackendsClient(t *testing.T) {
	c := newBackend(Backend{Name: "a", Socket: "a.sock"}, Options{}, transport{}).client
	if c.StreamResponseBody || c.MaxConnDuration != 0 || c.DisableHeaderNamesNormalizing {
		t.Errorf("the backends' client sets StreamResponseBody %v, MaxConnDuration %s, DisableHeaderNamesNormalizing %v: "+
			"roundTrip (transport.go) does not do them", c.StreamResponseBody, c.MaxConnDuration, c.DisableHeaderNamesNormalizing)
	}
}

// eventClient is a Client whose hang-up the test fires: it records
// the watch's callback and whether the watch was stopped.
type eventClient struct {
	mu      sync.Mutex
	onGone  func()
	stopped bool
	polls   atomic.Int32
}

func (c *eventClient) Watch(onGone func()) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onGone = onGone
	return func() { c.mu.Lock(); c.stopped = true; c.mu.Unlock() }, nil
}

func (c *eventClient) Gone() bool { c.polls.Add(1); return false }

// hangUp fires the recorded callback.
func (c *eventClient) hangUp() {
	c.mu.Lock()
	f := c.onGone
	c.mu.Unlock()
	f()
}

// TestHangupEventClosesTheUpstreamAtOnce: a Client that can be watched
// is never polled, and its hang-up closes the upstream connection at
// once, well within a poll; the watch is stopped when DoRouteFor returns.
func TestHangupEventClosesTheUpstreamAtOnce(t *testing.T) {
	dir := shortDir(t)
	arrived, saw := make(chan struct{}, 1), make(chan error, 1)
	a := startBackend(t, dir, "a", hangupHandler(arrived, saw))
	p := New(Options{})
	p.SetBackends([]Backend{a.Backend})
	c := &eventClient{}
	done := make(chan error, 1)
	go func() { done <- sendToClient(p, "http://lb/v2/models/m/infer", c) }()
	recv(t, arrived, "the request to reach the backend")
	polltest.Until(t, waitLimit, time.Millisecond, "the Client to be watched", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.onGone != nil
	})
	start := time.Now()
	c.hangUp()
	if err := recv(t, saw, "the backend's read"); !errors.Is(err, io.EOF) {
		t.Errorf("the backend read %v, want EOF: the upstream connection was not closed", err)
	}
	if d := time.Since(start); d >= ClientPoll {
		t.Errorf("the upstream connection was closed %s after the hang-up, want at once (under a poll, %s)", d, ClientPoll)
	}
	if err := recv(t, done, "DoRouteFor"); !errors.Is(err, ErrClientGone) {
		t.Errorf("DoRouteFor = %v, want ErrClientGone", err)
	}
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if !stopped || c.polls.Load() != 0 {
		t.Errorf("watch stopped %v, Gone polled %d times; want stopped and never polled", stopped, c.polls.Load())
	}
}

// sendToClient is sendTo with any Client.
func sendToClient(p *Proxy, uri string, c Client) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(uri)
	err := p.DoRouteFor(req, resp, time.Now().Add(waitLimit), nil, c, nil)
	if err == nil && resp.StatusCode() != fasthttp.StatusOK {
		err = errors.New("answered " + resp.String())
	}
	return err
}
