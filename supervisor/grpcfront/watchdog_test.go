package grpcfront

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"
	"google.golang.org/protobuf/proto"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

var (
	inferMethod  = "/" + pb.GRPCInferenceService_ServiceDesc.ServiceName + "/ModelInfer"
	streamMethod = "/" + pb.GRPCInferenceService_ServiceDesc.ServiceName + "/ModelStreamInfer"
)

// hostileConn serves o and dials it with a raw HTTP/2 client whose reads
// end after 20s.
func hostileConn(t *testing.T, o Options) (*hostile.H2, string) {
	t.Helper()
	_, addr := listen(t, o)
	h, err := hostile.DialH2(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	_ = h.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	return h, addr
}

// ended waits for stream id to end and checks it ended within the bound
// and before the handler was reached.
func ended(t *testing.T, h *hostile.H2, id uint32, start time.Time, within time.Duration) string {
	t.Helper()
	how, err := h.End(id)
	if err != nil {
		t.Fatalf("the stream did not end: %v", err)
	}
	if took := time.Since(start); took > within {
		t.Errorf("the stream ended after %v, want within %v", took, within)
	}
	return how
}

func unreached(t *testing.T) Handler {
	return func(context.Context, *fasthttp.RequestCtx) { t.Error("the handler was reached") }
}

// A unary RPC whose message claims 1000 bytes and trickles 10 is ended
// at Timeouts.Message, its handler never run.
func TestMessageTimeout(t *testing.T) {
	h, addr := hostileConn(t, Options{Handler: unreached(t), Timeouts: Timeouts{Message: 200 * time.Millisecond}})
	start := time.Now()
	id, err := h.Open(addr, inferMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Framer.WriteData(id, false, append(hostile.MessagePrefix(1000), "0123456789"...)); err != nil {
		t.Fatal(err)
	}
	how := ended(t, h, id, start, 10*time.Second)
	if !strings.HasPrefix(how, "grpc ") && !strings.HasPrefix(how, "rst") || how == "grpc OK" {
		t.Errorf("the stream ended %q, want a status or a reset", how)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Errorf("the stream ended %q before the message timeout", how)
	}
}

// A stream that sends no message is ended at Timeouts.StreamIdle.
func TestStreamIdleTimeout(t *testing.T) {
	h, addr := hostileConn(t, Options{Handler: unreached(t), Timeouts: Timeouts{StreamIdle: 200 * time.Millisecond}})
	start := time.Now()
	id, err := h.Open(addr, streamMethod)
	if err != nil {
		t.Fatal(err)
	}
	ended(t, h, id, start, 10*time.Second)
	if time.Since(start) < 200*time.Millisecond {
		t.Error("the stream ended before its idle timeout")
	}
}

// A connection over MaxConnections is answered GOAWAY REFUSED_STREAM,
// saying why, at once; the one under it is served.
func TestConnectionCap(t *testing.T) {
	first, addr := hostileConn(t, Options{Handler: unreached(t), MaxConnections: 1})
	second, err := hostile.DialH2(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	_ = second.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	code, debug, err := second.GoAway()
	if err != nil || code != http2.ErrCodeRefusedStream || !strings.Contains(debug, "grpc.max_connections") {
		t.Errorf("over the cap: GOAWAY %v %q (err %v), want REFUSED_STREAM naming grpc.max_connections", code, debug, err)
	}
	// The first is a served connection: a ping is answered.
	if err := answersPing(first.Framer); err != nil {
		t.Fatalf("the connection under the cap: %v", err)
	}
}

// A stream whose client gives it no window for its answers (SETTINGS
// INITIAL_WINDOW_SIZE 0) blocks its handler once its answers fill the
// write quota: Timeouts.Write closes the connection.
func TestWriteTimeoutClosesTheConnection(t *testing.T) {
	bigError := `{"error":"` + strings.Repeat("a", 16<<10) + `"}`
	h, addr := hostileConn(t, Options{Handler: func(_ context.Context, ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetBodyString(bigError)
	}, Timeouts: Timeouts{Write: 200 * time.Millisecond}})
	if err := h.Framer.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	id, err := h.Open(addr, streamMethod)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(&pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{
		{Name: "x", Datatype: "FP32", Shape: []int64{1}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 { // 10 answers of 16 KiB: over the 64 KiB write quota
		if err := h.Framer.WriteData(id, false, hostile.Message(msg)); err != nil {
			t.Fatal(err)
		}
	}
	how, err := h.End(id)
	if err == nil {
		t.Fatalf("the stream ended %q; want its connection closed", how)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the connection was not closed within 20s")
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("the connection was closed after %v, before the write timeout", took)
	}
}

// HTTP/2 rapid reset: a connection that resets more than h2conn.EarlyEndsBurst
// streams before their message is closed.
func TestRapidResetClosesTheConnection(t *testing.T) {
	h, addr := hostileConn(t, Options{Handler: unreached(t)})
	for i := range 4 * h2conn.EarlyEndsBurst {
		id, err := h.Open(addr, inferMethod)
		if err == nil {
			err = h.Framer.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if err != nil {
			if i <= h2conn.EarlyEndsBurst {
				t.Fatalf("the connection failed after %d resets, within the budget: %v", i, err)
			}
			return // closed, as it should be
		}
	}
	// The writes may all have fitted the socket buffer: the close shows
	// on the read side.
	if _, err := h.End(0); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection is still open after %d resets: %v", 4*h2conn.EarlyEndsBurst, err)
	}
}

// RPCs past MaxRPCs, across connections, are refused RESOURCE_EXHAUSTED
// at their header; a place is given back when its RPC ends.
func TestRPCCap(t *testing.T) {
	h, addr := hostileConn(t, Options{Handler: unreached(t), MaxRPCs: 2})
	first, err := h.Open(addr, inferMethod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Open(addr, inferMethod); err != nil {
		t.Fatal(err)
	}
	refusedBusy(t, h, addr, "the third RPC")
	if err := h.Framer.WriteRSTStream(first, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	// The reset gives its place back, asynchronously: a fourth RPC gets
	// it within the bound.
	polltest.Until(t, 10*time.Second, 10*time.Millisecond, "a place given back", func() bool {
		id, err := h.Open(addr, inferMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Framer.WriteData(id, false, hostile.MessagePrefix(10)); err != nil {
			t.Fatal(err)
		}
		_ = h.Conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		how, _ := h.End(id)
		_ = h.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		return how == "" // not refused: still waiting for its message
	})
}

// A timer whose fire had started when its wait ended (the message came
// in as its bound ran out) must not act on the wait armed next: before,
// it read the next wait's kind, so a stale message bound closed the
// connection as if the answer armed after it had not been taken. fire is
// called here as the late timer goroutine would.
func TestStaleTimeoutSparesTheNextWait(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	conn := new(h2conn.Set).Add(a)
	ctx := watch(context.Background(), time.Hour, conn, nil, nil)
	w := watchdogOf(ctx)
	w.received()
	w.arm(time.Hour, true) // the answer's write, just begun
	w.fire()
	if conn.Closed() || ctx.Err() != nil {
		t.Fatalf("a stale timeout acted on a write armed for 1h: connection closed %v, stream %v", conn.Closed(), ctx.Err())
	}
	w.disarm()
	w.fire()
	if ctx.Err() != nil {
		t.Fatal("a stale timeout ended a stream with no wait armed")
	}
	// A write that does time out still closes the connection.
	w.arm(time.Millisecond, true)
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the write timeout closing the connection", conn.Closed)
	if ctx.Err() == nil {
		t.Error("the write timeout closed the connection but left the stream running")
	}
}

// A unary handler whose client cancelled the RPC returns after the
// stream has ended and arms the answer's write bound: nothing may come of
// it, where before it closed the connection at write_timeout and struck
// the client's address as one that had not taken an answer.
func TestEndedStreamArmsNothing(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	conn := new(h2conn.Set).Add(a)
	rpcs := &rpcCap{}
	rpcs.open.Store(1) // this stream's place, given back when it ends
	parent, cancel := context.WithCancel(context.Background())
	ctx := watch(parent, time.Hour, conn, rpcs, nil)
	w := watchdogOf(ctx)
	w.received()
	cancel() // the client's RST_STREAM
	polltest.Until(t, 10*time.Second, time.Millisecond, "the stream's end to run",
		func() bool { return rpcs.open.Load() == 0 })
	w.arm(time.Nanosecond, true) // unaryWatch, as the handler returns
	w.fire()                     // as the timer would, past that deadline
	if conn.Closed() {
		t.Fatal("a write bound armed after the stream ended closed its connection")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.deadline.IsZero() {
		t.Errorf("a write bound is armed (deadline %v) on a stream that has ended", w.deadline)
	}
}
