package front

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront"
)

// gatedAnswer is a worker's binary infer answer (a JSON header of one
// UINT8 output of n bytes, then its bytes) that sends its header and
// first 64 KiB, then waits for open (or done) before the rest.
type gatedAnswer struct {
	b          []byte
	sent       int
	open, done <-chan struct{}
}

func newGatedAnswer(n int, open, done <-chan struct{}) (*gatedAnswer, int) {
	head := fmt.Sprintf(`{"model_name":"mlp","outputs":[{"name":"y","datatype":"UINT8","shape":[%d],"parameters":{"binary_data_size":%d}}]}`, n, n)
	return &gatedAnswer{b: append([]byte(head), make([]byte, n)...), open: open, done: done}, len(head)
}

func (g *gatedAnswer) Read(p []byte) (int, error) {
	if g.sent == 64<<10 {
		select {
		case <-g.open:
		case <-g.done:
			return 0, io.EOF
		}
	}
	if g.sent == len(g.b) {
		return 0, io.EOF
	}
	end := len(g.b)
	if g.sent < 64<<10 {
		end = min(end, 64<<10)
	}
	n := copy(p, g.b[g.sent:end])
	g.sent += n
	return n, nil
}

// grpcFront serves gRPC through f's ServeInternal, charging f's budget.
func grpcFront(t *testing.T, f *frontHarness) pb.GRPCInferenceServiceClient {
	return serveGRPC(t, grpcfront.Options{Budget: f.fr.adm, Handler: f.fr.ServeInternal, MaxMessageBytes: 4 << 20,
		Timeouts: grpcfront.Timeouts{Message: 3 * time.Second, StreamIdle: time.Minute, Write: 10 * time.Second}})
}

var smallInfer = &pb.ModelInferRequest{ModelName: "mlp", Inputs: []*pb.ModelInferRequest_InferInputTensor{
	{Name: "x", Datatype: "UINT8", Shape: []int64{4}}}, RawInputContents: [][]byte{make([]byte, 4)}}

// TestGRPCAnswerChargedFromItsHeader: a gRPC answer is charged to the
// body budget from the worker's header, before its body is read, as an
// HTTP one is (answerGate), and the charge goes with it to the gRPC
// front, which gives it back once the answer is written. Charged only
// once read whole, the answers of gRPC clients that never read them
// were read and only then refused, uncounted meanwhile, each a worker's
// answer of garbage (grpc-unread-large: the master's RSS rose past the
// budget). Here the worker sends a 2 MiB answer's first 64 KiB and
// waits: its whole length must be charged by then.
func TestGRPCAnswerChargedFromItsHeader(t *testing.T) {
	f := startFront(t, nil)
	open, done := make(chan struct{}), make(chan struct{})
	const n = 2 << 20
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		g, hlen := newGatedAnswer(n, open, done)
		ctx.Response.Header.Set("Inference-Header-Content-Length", fmt.Sprint(hlen))
		ctx.SetBodyStream(g, len(g.b))
	})
	t.Cleanup(func() { close(done) }) // before the worker's shutdown waits on it
	c := grpcFront(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		resp *pb.ModelInferResponse
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := c.ModelInfer(ctx, smallInfer)
		got <- result{resp, err}
	}()
	want := int64(n) + 1<<10 // and its JSON header
	pollFor(t, "the answer charged while its body is read", func() bool {
		a := f.fr.adm.Bodies().Answers().State().Bytes
		return a >= n && a <= want
	})
	close(open)
	r := <-got
	if r.err != nil {
		t.Fatalf("ModelInfer: %v", r.err)
	}
	if len(r.resp.RawOutputContents) != 1 || len(r.resp.RawOutputContents[0]) != n {
		t.Fatalf("answer outputs %d, want one of %d bytes", len(r.resp.RawOutputContents), n)
	}
	f.waitBudgetEmpty(t)
}

// TestGRPCAnswerRefusedFromItsHeader: with the budget's share of large
// answers full, a gRPC answer is refused from its header,
// RESOURCE_EXHAUSTED at once, though its worker never sends the body
// (read first, it would hold the RPC to its deadline); the refusal is
// counted and nothing stays charged.
func TestGRPCAnswerRefusedFromItsHeader(t *testing.T) {
	f := startFront(t, nil)
	done := make(chan struct{})
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		g, hlen := newGatedAnswer(2<<20, nil, done)
		ctx.Response.Header.Set("Inference-Header-Content-Length", fmt.Sprint(hlen))
		ctx.SetBodyStream(g, len(g.b))
	})
	t.Cleanup(func() { close(done) })                     // before the worker's shutdown waits on it
	held, err := f.fr.adm.Bodies().ReserveAnswer(6 << 20) // of the 7 MiB share
	if err != nil {
		t.Fatal(err)
	}
	c := grpcFront(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.ModelInfer(ctx, smallInfer)
	if status.Code(err) != codes.ResourceExhausted || time.Since(start) > 5*time.Second {
		t.Fatalf("a 2 MiB answer with 1 MiB of room: %v after %v, want RESOURCE_EXHAUSTED at once", err, time.Since(start).Round(time.Millisecond))
	}
	if n := f.fr.bodies.snapshot().AnswersRefused; n != 1 {
		t.Errorf("answers refused counted %d, want 1", n)
	}
	held.Release()
	f.waitBudgetEmpty(t)
}
