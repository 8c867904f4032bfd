package prep

import (
	"bytes"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/arena"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/worker"
)

// fakeInfer is an infer worker on a Unix socket that does what behave
// says with each request; hits counts them.
type fakeInfer struct {
	socket string
	hits   atomic.Int64
	srv    *fasthttp.Server
}

// waitClosed waits (bounded) until f has no connection open. A test
// that measures the prep's heap waits so, with f closing each connection
// after its answer (ctx.SetConnectionClose), because f runs in the test's
// process: the goroutine that wrote an answer holds its request and
// answer until it has reset them, after the prep has read the answer,
// and a busy machine may run it only later. A connection stops counting
// as open once its goroutine has let go of both.
func (f *fakeInfer) waitClosed(t *testing.T) {
	t.Helper()
	if !polltest.Wait(30*time.Second, time.Millisecond, func() bool { return f.srv.GetOpenConnectionsCount() == 0 }) {
		t.Fatalf("the fake infer worker still has %d connections open, want 0", f.srv.GetOpenConnectionsCount())
	}
}

func startFakeInfer(t *testing.T, behave fasthttp.RequestHandler) *fakeInfer {
	t.Helper()
	return startFakeInferAt(t, filepath.Join(t.TempDir(), "infer.sock"), behave)
}

// startFakeInferAt is startFakeInfer on the given socket path.
func startFakeInferAt(t *testing.T, socket string, behave fasthttp.RequestHandler) *fakeInfer {
	t.Helper()
	f := &fakeInfer{socket: socket}
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	// ReduceMemoryUsage: an idle connection keeps no request body, so that
	// tests measuring the prep's heap measure the prep's alone.
	srv := &fasthttp.Server{ReduceMemoryUsage: true, Handler: func(ctx *fasthttp.RequestCtx) { f.hits.Add(1); behave(ctx) }}
	f.srv = srv
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return f
}

// arenaHandler is a prep handler with a 2-slot arena, forwarding to
// sockets.
func arenaHandler(t *testing.T, sockets ...string) *handler {
	t.Helper()
	a, err := arena.Create(2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	up := lb.New(lb.Options{Timeout: time.Minute, Logger: zerolog.Nop()})
	r := newRouter(up, nil, nil, zerolog.Nop())
	r.fetch = func(string, time.Duration) ([]worker.ModelStatus, error) { // every worker serves m
		return []worker.ModelStatus{{Metadata: tensor.Metadata{Name: "m"}}}, nil
	}
	r.update(sockets)
	return &handler{routes: r, up: up, timeout: time.Minute, log: zerolog.Nop(), arena: a, bodies: newBodyDecoder(0)}
}

// forwardWithin runs one request through h with the client's deadline
// in (negative: already passed).
func forwardWithin(h *handler, in time.Duration) (int, error) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set(worker.DeadlineHeader, strconv.FormatInt(time.Now().Add(in).UnixNano(), 10))
	m := &model{md: tensor.Metadata{Name: "m"}}
	_, _, status, err := h.forward(&ctx, m, &v2.InferRequest{})
	return status, err
}

// TestExpiredRequestTakesNoSlot: a request whose client deadline passed
// is answered 503 at once, reaches no infer worker and holds no slot.
func TestExpiredRequestTakesNoSlot(t *testing.T) {
	f := startFakeInfer(t, func(ctx *fasthttp.RequestCtx) {})
	h := arenaHandler(t, f.socket)
	status, err := forwardWithin(h, -time.Second)
	if status != fasthttp.StatusServiceUnavailable || !errors.Is(err, errExpired) {
		t.Fatalf("expired request: %d %v, want 503 errExpired", status, err)
	}
	if n := h.arena.Stats().InUse; n != 0 || f.hits.Load() != 0 {
		t.Fatalf("expired request: %d slots in use, %d infer requests, want none", n, f.hits.Load())
	}
}

// TestUnsentRequestFreesItsSlotAtOnce: no backend, a socket nobody
// listens on, or an infer worker that takes the request but never claims
// the slot nor answers: the request fails and its slot is free the moment
// forward returns, not after a grace.
func TestUnsentRequestFreesItsSlotAtOnce(t *testing.T) {
	release := make(chan struct{})
	hang := startFakeInfer(t, func(ctx *fasthttp.RequestCtx) { <-release })
	t.Cleanup(func() { close(release) }) // runs before the server's shutdown
	for _, c := range []struct {
		name    string
		sockets []string
		within  time.Duration
		status  int
	}{
		{"no backend", nil, time.Minute, fasthttp.StatusServiceUnavailable},
		{"dial failure", []string{filepath.Join(t.TempDir(), "nobody.sock")}, time.Minute, fasthttp.StatusServiceUnavailable},
		{"deadline before the infer worker claimed", []string{hang.socket}, 200 * time.Millisecond, fasthttp.StatusGatewayTimeout},
	} {
		h := arenaHandler(t, c.sockets...)
		for range 3 { // more requests than slots: each one's slot came back
			if status, err := forwardWithin(h, c.within); status != c.status {
				t.Fatalf("%s: %d %v, want %d", c.name, status, err, c.status)
			}
			if n := h.arena.Stats().InUse; n != 0 {
				t.Fatalf("%s: %d slots still in use after the request failed", c.name, n)
			}
		}
	}
}

// TestClaimedSlotOutlivesTheRequest: an infer worker that claimed the slot
// and is still running when the prep side gives up keeps it until it
// finishes; then the slot is free.
func TestClaimedSlotOutlivesTheRequest(t *testing.T) {
	finish := make(chan struct{})
	claimed := make(chan struct{}, 1)
	var inferSide *arena.Arena
	f := startFakeInfer(t, func(ctx *fasthttp.RequestCtx) {
		ref, _ := arena.ParseRef(string(ctx.Request.Header.Peek(worker.ArenaHeader)))
		slot := string(ctx.Request.Header.Peek(worker.SlotHeader))
		tk, _, err := arena.ParseSlotDescriptor(slot)
		a, err2 := arena.Open(ref)
		if err != nil || err2 != nil || a.Claim(tk) != nil {
			t.Errorf("fake infer worker: cannot claim %q: %v %v", slot, err, err2)
			return
		}
		inferSide = a
		claimed <- struct{}{}
		<-finish
		a.Finish(tk)
	})
	h := arenaHandler(t, f.socket)
	if status, _ := forwardWithin(h, 300*time.Millisecond); status != fasthttp.StatusGatewayTimeout {
		t.Fatalf("status %d, want 504", status)
	}
	<-claimed
	if n := h.arena.Stats().InUse; n != 1 {
		t.Fatalf("%d slots in use while the infer worker holds its claim, want 1", n)
	}
	close(finish)
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the slot back after the infer worker finished",
		func() bool { return h.arena.Stats().InUse == 0 })
	inferSide.Close()
}

// TestArenaRefusalIsResentInline: an infer worker that cannot open the
// prep worker's arena answers with worker.ArenaRefusedHeader; the prep
// worker frees the slot and sends the same request again with the tensors
// in the body, so the client gets its answer. The refusal is logged once,
// however many requests it hits.
func TestArenaRefusalIsResentInline(t *testing.T) {
	var inline atomic.Int64
	f := startFakeInfer(t, func(ctx *fasthttp.RequestCtx) {
		if len(ctx.Request.Header.Peek(worker.ArenaHeader)) > 0 {
			ctx.Error("could not open the arena", fasthttp.StatusServiceUnavailable)
			ctx.Response.Header.Set(worker.ArenaRefusedHeader, "1")
			return
		}
		if _, err := tensor.ParseRequest(ctx.PostBody()); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadRequest)
			return
		}
		inline.Add(1)
		ctx.SetBody(tensor.AppendTensors(nil, nil))
	})
	h := arenaHandler(t, f.socket)
	var logs bytes.Buffer
	h.log = zerolog.New(&logs)
	const n = 3
	for i := range n {
		if status, err := forwardWithin(h, time.Minute); status != fasthttp.StatusOK {
			t.Fatalf("request %d: %d %v, want 200 after the inline resend", i, status, err)
		}
		if inUse := h.arena.Stats().InUse; inUse != 0 {
			t.Fatalf("request %d: %d slots still in use after the refusal", i, inUse)
		}
	}
	if got, hits := inline.Load(), f.hits.Load(); got != n || hits != 2*n {
		t.Fatalf("%d inline requests of %d infer requests, want %d of %d (one refused, one inline each)", got, hits, n, 2*n)
	}
	if c := strings.Count(logs.String(), "could not open this prep worker's shared-memory arena"); c != 1 {
		t.Fatalf("the refusal was logged %d times, want once:\n%s", c, logs.String())
	}
}
