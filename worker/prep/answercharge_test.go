package prep

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
)

// typesHandler is a prep handler serving "types" (INT64 [-1,4] in, out
// y INT64 [-1,4]: no batching) through gate, forwarding to a fake infer
// worker that answers every request with out.
func typesHandler(t *testing.T, gate *decodegate.Gate, out tensor.Tensor) (*handler, *fakeInfer) {
	t.Helper()
	reply := tensor.AppendTensors(nil, []tensor.Tensor{out})
	return typesHandlerFor(t, gate, func(ctx *fasthttp.RequestCtx) { ctx.SetBody(reply) })
}

// typesHandlerFor is typesHandler with an infer worker that behaves so.
func typesHandlerFor(t *testing.T, gate *decodegate.Gate, behave fasthttp.RequestHandler) (*handler, *fakeInfer) {
	t.Helper()
	inf := startFakeInfer(t, behave)
	up := lb.New(lb.Options{Timeout: time.Minute, Logger: zerolog.Nop()})
	r := newRouter(up, nil, nil, zerolog.Nop())
	r.gate = gate
	r.fetch = func(string, time.Duration) ([]worker.ModelStatus, error) {
		return []worker.ModelStatus{{Metadata: tensor.Metadata{Name: "types", Platform: "onnxruntime_onnx",
			Inputs:  []tensor.Spec{{Name: "ids", DType: tensor.Int64, Shape: []int64{-1, 4}}},
			Outputs: []tensor.Spec{{Name: "y", DType: tensor.Int64, Shape: []int64{-1, 4}}}}}}, nil
	}
	r.update([]string{inf.socket})
	bodies := newBodyDecoder(0)
	bodies.gate = gate
	return &handler{routes: r, up: up, timeout: time.Minute, log: zerolog.Nop(), bodies: bodies}, inf
}

// postTypes serves a request of rows to typesHandler's h, binary, and
// returns its context, user values open (its answer unread).
func postTypes(h *handler, rows int) *fasthttp.RequestCtx {
	header := fmt.Sprintf(`{"inputs":[{"name":"ids","datatype":"INT64","shape":[%d,4],"parameters":{"binary_data_size":%d}}]}`, rows, rows*32)
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("/v2/models/types/infer")
	ctx.Request.Header.Set(headerLenHeader, strconv.Itoa(len(header)))
	ctx.Request.SetBodyRaw(append([]byte(header), make([]byte, rows*32)...))
	h.serve(ctx)
	ctx.Request.SetBodyRaw(nil) // only the answer counts
	return ctx
}

// longestInt64s is rows × 4 INT64 of -2^63+1, the longest in JSON.
func longestInt64s(rows int) []byte {
	return bytes.Repeat(binary.LittleEndian.AppendUint64(nil, 1<<63+1), rows*4)
}

// TestHugeAnswersKeepTheHeapBounded: many requests at once, each for an
// answer of megabytes of JSON that nobody reads yet (their request
// contexts are kept, user values not closed, as a connection whose
// client does not read keeps them): only as many as the large lane has
// room for reach the infer worker and are answered, the rest get 503
// with Retry-After at once, and the heap they hold stays within the
// lane. Once the answers are written, the room is back. The fake infer
// worker closes each connection after its answer and the heap is read
// once it has let go of them (waitClosed): it runs in this process, and
// its requests and answers, held until its goroutines run again, are not
// the prep's (on a busy machine they added 24 MiB over the lane).
func TestHugeAnswersKeepTheHeapBounded(t *testing.T) {
	const rows, clients = 64 << 10, 12 // 2 MiB of outputs, 5.25 MiB of JSON an answer
	g := testGate(2, 1<<20, 2<<20+32<<20)
	reply := tensor.AppendTensors(nil, []tensor.Tensor{{Name: "y", DType: tensor.Int64, Shape: []int64{rows, 4}, Data: longestInt64s(rows)}})
	h, inf := typesHandlerFor(t, g, func(ctx *fasthttp.RequestCtx) { ctx.SetConnectionClose(); ctx.SetBody(reply) })
	post := func() *fasthttp.RequestCtx { return postTypes(h, rows) }
	before := liveHeap()
	ctxs := make([]*fasthttp.RequestCtx, clients)
	var wg sync.WaitGroup
	for i := range ctxs {
		wg.Add(1)
		go func() { defer wg.Done(); ctxs[i] = post() }()
	}
	wg.Wait()
	inf.waitClosed(t)
	held := int64(liveHeap()) - int64(before)
	served, refused := 0, 0
	for _, ctx := range ctxs {
		switch s := ctx.Response.StatusCode(); {
		case s == fasthttp.StatusOK:
			served++
		case s == fasthttp.StatusServiceUnavailable && len(ctx.Response.Header.Peek(fasthttp.HeaderRetryAfter)) > 0:
			refused++
		default:
			t.Fatalf("a huge answer: %d %.200q, want 200, or 503 with Retry-After", s, ctx.Response.Body())
		}
	}
	t.Logf("%d answered, %d refused, %d infer requests; heap held %.1f MiB, the lane %.1f MiB",
		served, refused, inf.hits.Load(), float64(held)/(1<<20), float64(g.Largest())/(1<<20))
	perAnswer := int64(rows * 4 * (8 + 21)) // outputs and their longest JSON
	if most := int(g.Largest() / perAnswer); served < 1 || served > most || int(inf.hits.Load()) != served {
		t.Errorf("%d answered of %d, %d infer requests: want 1 to %d (the lane's room), each the only ones to reach the infer worker",
			served, clients, inf.hits.Load(), most)
	}
	if held > g.Largest() {
		t.Errorf("%d unread huge answers held %d bytes of heap, over the large lane's %d", served, held, g.Largest())
	}
	for _, ctx := range ctxs {
		ctx.ResetUserValues() // as fasthttp does once the answer is written
	}
	waitState(t, g, decodegate.State{})
	if ctx := post(); ctx.Response.StatusCode() != fasthttp.StatusOK {
		t.Errorf("a huge answer once the others were written: %d, want 200", ctx.Response.StatusCode())
	}
}

// TestRefusedAnswerPinsNoPooledBuffer: a refused answer (503, its room
// not found) is written into a body of its own size. fasthttp's
// response bodies come from one pool, the one the infer workers'
// replies are read into, and ctx.SetBody copied the short error into
// whatever buffer that pool handed out: an unread 503 then pinned a
// reply's megabytes that no charge counts (TestHugeAnswersKeepTheHeapBounded
// saw 2 MiB a refused request, "heap 39.8 MiB against a 32 MiB lane").
// The pool is per P and may drop what it is given, so the big buffer is
// offered again before each of a bounded number of tries.
func TestRefusedAnswerPinsNoPooledBuffer(t *testing.T) {
	const reply = 2 << 20
	for i := range 50 {
		resp := fasthttp.AcquireResponse()
		resp.SetBody(make([]byte, reply)) // as lb reads an infer reply
		fasthttp.ReleaseResponse(resp)
		ctx := new(fasthttp.RequestCtx)
		refuseAnswer(ctx)
		if n := cap(ctx.Response.Body()); n >= reply {
			t.Fatalf("try %d: a refused answer of %d bytes holds a %d-byte buffer, want its own size", i, len(ctx.Response.Body()), n)
		}
	}
}

// TestServedAnswerGivesItsRoomBack, through a real fasthttp server: a
// huge answer holds its room while the server writes it and gives it
// back once written (the server closes the request's user values), so a
// next one is answered too.
func TestServedAnswerGivesItsRoomBack(t *testing.T) {
	const rows = 64 << 10
	g := testGate(1, 1<<20, 1<<20+16<<20) // room for one answer at a time
	h, _ := typesHandler(t, g, tensor.Tensor{Name: "y", DType: tensor.Int64, Shape: []int64{rows, 4}, Data: longestInt64s(rows)})
	post := serveTypes(t, h, rows)
	for i := range 3 {
		resp := fasthttp.AcquireResponse()
		if err := post(resp); err != nil || resp.StatusCode() != fasthttp.StatusOK {
			t.Fatalf("huge answer %d, after those before were written: %v %d %.200q, want 200", i, err, resp.StatusCode(), resp.Body())
		}
		fasthttp.ReleaseResponse(resp)
		waitState(t, g, decodegate.State{})
	}
}

// serveTypes serves h (typesHandler's) through a real fasthttp server,
// and returns a function that posts it a request of rows, binary, and
// reads the answer into resp.
func serveTypes(t *testing.T, h *handler, rows int) func(resp *fasthttp.Response) error {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "prep.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h.serve}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return net.Dial("unix", sock) }}
	header := fmt.Sprintf(`{"inputs":[{"name":"ids","datatype":"INT64","shape":[%d,4],"parameters":{"binary_data_size":%d}}]}`, rows, rows*32)
	body := append([]byte(header), make([]byte, rows*32)...)
	return func(resp *fasthttp.Response) error {
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		req.SetRequestURI("http://prep/v2/models/types/infer")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.Set(headerLenHeader, strconv.Itoa(len(header)))
		req.SetBodyRaw(body)
		return c.DoTimeout(req, resp, time.Minute)
	}
}
