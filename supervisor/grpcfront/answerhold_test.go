package grpcfront

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/supervisor-dev/supervisor/internal/budget/budgettest"
	"github.com/supervisor-dev/supervisor/internal/hostile"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// bigAnswers answers every request with a binary infer answer whose one
// output is n bytes of a pattern (a fresh body each), counting calls.
func bigAnswers(n int, calls *atomic.Int64) Handler {
	hdr := `{"model_name":"m","outputs":[{"name":"y","datatype":"UINT8","shape":[` + strconv.Itoa(n) +
		`],"parameters":{"binary_data_size":` + strconv.Itoa(n) + `}}]}`
	pattern := make([]byte, n)
	for i := range pattern {
		pattern[i] = byte(i % 251)
	}
	return func(_ context.Context, ctx *fasthttp.RequestCtx) {
		calls.Add(1)
		body := make([]byte, len(hdr)+n)
		copy(body, hdr)
		copy(body[len(hdr):], pattern) // one copy: a byte loop under -race took milliseconds a call
		ctx.Response.Header.Set(headerLenHeader, strconv.Itoa(len(hdr)))
		ctx.Response.SetBodyRaw(body)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// wantOutput checks resp's one output: the n bytes bigAnswers sends.
func wantOutput(t *testing.T, resp *pb.ModelInferResponse, n int) {
	t.Helper()
	if len(resp.GetRawOutputContents()) != 1 || len(resp.GetOutputs()) != 1 {
		t.Fatalf("the answer has %d outputs and %d raw contents, want 1 and 1", len(resp.GetOutputs()), len(resp.GetRawOutputContents()))
	}
	raw := resp.GetRawOutputContents()[0]
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i % 251)
	}
	if !bytes.Equal(raw, want) || resp.GetOutputs()[0].GetName() != "y" || resp.GetModelName() != "m" {
		t.Fatalf("the answer is %q with %d bytes, not the handler's", resp.GetModelName(), len(raw))
	}
}

// A client that asks for large answers and gives them no window holds
// at most the budget of them: the answers past it are refused
// RESOURCE_EXHAUSTED, the ones held are given back when write_timeout
// closes its connection, and a client that reads gets its answers
// (unary and streamed, byte for byte), their charge given back once
// written. Without the charge the unread answers all stay in the heap.
//
// write_timeout runs from each answer's charge, so every check of the
// held answers must be done before it closes the connection: at 3 s, 64
// handlers, two GCs and the refusals read did not fit on a loaded
// machine (1 run in 6 under -count=6: some RPCs never reached their
// handler, the connection cut first). 10 s leaves that phase three
// times what it took there, and the test waits for the cut anyway.
func TestUnreadAnswersAreChargedUntilWritten(t *testing.T) {
	const answer, rpcs = 1 << 20, 64
	b := &budgettest.Ledger{Limit: 8 << 20}
	var calls atomic.Int64
	o := Options{Handler: bigAnswers(answer, &calls), Budget: b, Timeouts: Timeouts{Write: 10 * time.Second}}
	before := heapInUse()
	h, addr := hostileConn(t, o)
	start := time.Now()
	refused, cut := leaveUnread(t, h, addr, rpcs)
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "every RPC answered", func() bool { return calls.Load() == rpcs })
	polltest.Wait(2*time.Second, 5*time.Millisecond, func() bool { return refused.Load() >= rpcs-8 })
	if n := refused.Load(); n < rpcs-8 {
		t.Errorf("%d of %d unread answers were refused RESOURCE_EXHAUSTED, want all but the 8 the budget holds", n, rpcs)
	}
	grew := int64(heapInUse()) - int64(before)
	t.Logf("heap +%d KiB with %d unread answers of 1 MiB, %d refused, %v after the first RPC", grew>>10, rpcs, refused.Load(), time.Since(start))
	if grew > b.Limit+16<<20 {
		t.Errorf("the heap grew %d MiB with %d unread answers of 1 MiB, want at most the 8 MiB budget and 16 MiB more", grew>>20, rpcs)
	}
	if b.InUse() == 0 || b.InUse() > b.Limit {
		t.Errorf("the unread answers hold %d bytes of the budget, want some, at most %d", b.InUse(), b.Limit)
	}
	select {
	case <-cut:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection whose answers were not taken was not closed")
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the unread answers given back", func() bool { return b.InUse() == 0 })
	servedAndReleased(t, addr, b, answer)
}

// leaveUnread gives the server no window on h, then calls ModelInfer
// rpcs times; it reads h's frames until the connection ends (cut
// closed), counting the RPCs refused RESOURCE_EXHAUSTED.
func leaveUnread(t *testing.T, h *hostile.H2, addr string, rpcs int) (*atomic.Int64, <-chan struct{}) {
	t.Helper()
	if err := h.Framer.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(&pb.ModelInferRequest{ModelName: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for range rpcs {
		id, err := h.Open(addr, inferMethod)
		if err == nil {
			err = h.Framer.WriteData(id, true, hostile.Message(msg))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	refused := new(atomic.Int64)
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		for {
			f, err := h.Framer.ReadFrame()
			if err != nil {
				return
			}
			if _, how := hostile.Outcome(f); how == "grpc ResourceExhausted" {
				refused.Add(1)
			}
		}
	}()
	return refused, cut
}

// servedAndReleased calls ModelInfer and ModelStreamInfer on addr as a
// client that reads its answers, and checks them and that their charge
// is given back.
func servedAndReleased(t *testing.T, addr string, b *budgettest.Ledger, answer int) {
	t.Helper()
	c := inferClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "m"})
	if err != nil {
		t.Fatalf("a client that reads its answers: %v", err)
	}
	wantOutput(t, resp, answer)
	stream, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := stream.Send(&pb.ModelInferRequest{ModelName: "m"}); err != nil {
			t.Fatal(err)
		}
		got, err := stream.Recv()
		if err != nil || got.GetErrorMessage() != "" {
			t.Fatalf("a streamed answer: %v %q", err, got.GetErrorMessage())
		}
		wantOutput(t, got.GetInferResponse(), answer)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the answers written given back", func() bool { return b.InUse() == 0 })
}

// inferClient dials addr, closed when the test ends.
func inferClient(t *testing.T, addr string) pb.GRPCInferenceServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewGRPCInferenceServiceClient(conn)
}
