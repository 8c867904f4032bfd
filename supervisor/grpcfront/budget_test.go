package grpcfront

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"

	"github.com/supervisor-dev/supervisor/internal/budget/budgettest"
	"github.com/supervisor-dev/supervisor/internal/hostile"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// sendMessageStart opens an RPC of method on h and sends the prefix of
// a message of n bytes and 10 of its bytes.
func sendMessageStart(t *testing.T, h *hostile.H2, addr, method string, n uint32) uint32 {
	t.Helper()
	id, err := h.Open(addr, method)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Framer.WriteData(id, false, append(hostile.MessagePrefix(n), "0123456789"...)); err != nil {
		t.Fatal(err)
	}
	return id
}

// Messages in assembly are charged the lengths their prefixes declare
// before gRPC reads them, and given back when their RPC ends.
func TestMessagesAreChargedBeforeTheyAreRead(t *testing.T) {
	const maxMsg = 1000
	b := &budgettest.Ledger{Limit: 2 * maxMsg}
	h, addr := hostileConn(t, Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b})
	ids := []uint32{sendMessageStart(t, h, addr, inferMethod, 600), sendMessageStart(t, h, addr, inferMethod, 300)}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "both messages charged", func() bool { return b.InUse() == 900 })
	for _, id := range ids {
		if err := h.Framer.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			t.Fatal(err)
		}
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the charges given back", func() bool { return b.InUse() == 0 })
}

// A stream waiting for its next message holds nothing; its message is
// charged from its prefix, and given back when the server ends it.
func TestStreamMessageIsCharged(t *testing.T) {
	const maxMsg = 1000
	b := &budgettest.Ledger{Limit: maxMsg}
	h, addr := hostileConn(t, Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b,
		Timeouts: Timeouts{StreamIdle: 300 * time.Millisecond}})
	id, err := h.Open(addr, streamMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := answersPing(h.Framer); err != nil || b.InUse() != 0 {
		t.Fatalf("an idle stream: %d bytes charged (%v), want 0", b.InUse(), err)
	}
	if err := h.Framer.WriteData(id, false, hostile.MessagePrefix(maxMsg)); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the stream's message charged", func() bool { return b.InUse() == maxMsg })
	// StreamIdle ends the stream with its message unfinished.
	if _, err := h.End(id); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the charge given back", func() bool { return b.InUse() == 0 })
}

// The attack: RPCs that declare the largest message and trickle it.
// The budget is charged what they declare; a connection whose message
// does not fit stops being read and is closed at Timeouts.Message, and
// everything is given back once they are gone.
func TestTrickledMessagesStallTheConnectionThatDoesNotFit(t *testing.T) {
	const maxMsg = 1000
	b := &budgettest.Ledger{Limit: 2 * maxMsg}
	o := Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b,
		Timeouts: Timeouts{Message: 300 * time.Millisecond, StreamIdle: time.Minute}}
	first, addr := hostileConn(t, o)
	for range 2 { // streams: bounded by StreamIdle, they hold past the message timeout
		sendMessageStart(t, first, addr, streamMethod, maxMsg)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "two messages charged", func() bool { return b.InUse() == 2*maxMsg })
	second, err := hostile.DialH2(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	_ = second.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	start := time.Now()
	// A stream, too: a unary RPC's own message timeout would end it (and
	// its wait) at the same time as the connection's wait.
	sendMessageStart(t, second, addr, streamMethod, maxMsg)
	if _, err := second.End(0); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection that does not fit: %v, want it closed", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("closed after %v, before the message timeout", took)
	}
	if b.InUse() != 2*maxMsg {
		t.Errorf("%d bytes charged with the first connection's two messages, want %d", b.InUse(), 2*maxMsg)
	}
	first.Close()
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "everything given back", func() bool { return b.InUse() == 0 })
}

// inferAnswer answers every request 200 with an empty V2 infer response.
func inferAnswer(_ context.Context, ctx *fasthttp.RequestCtx) {
	body := `{"model_name":"m","outputs":[]}`
	ctx.Response.Header.Set(headerLenHeader, "31")
	ctx.SetBodyString(body)
}

// What 6737040 broke: with a budget of two largest messages, 64 small
// ModelInfer RPCs at once and 64 idle streams all go through.
func TestLegitConcurrencyFitsTwoLargestMessages(t *testing.T) {
	const maxMsg = 1 << 20
	b := &budgettest.Ledger{Limit: 2 * maxMsg}
	_, addr := listen(t, Options{Handler: inferAnswer, MaxMessageBytes: maxMsg, Budget: b, MaxConcurrentStreams: 256,
		Timeouts: Timeouts{Message: 10 * time.Second, StreamIdle: time.Minute, Write: 10 * time.Second}})
	c := inferClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 64 {
		if _, err := c.ModelStreamInfer(ctx); err != nil {
			t.Fatalf("idle stream %d: %v", i, err)
		}
	}
	req := &pb.ModelInferRequest{ModelName: "m", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "UINT8", Shape: []int64{16 << 10}}},
		RawInputContents: [][]byte{make([]byte, 16<<10)}}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.ModelInfer(ctx, req); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a ModelInfer RPC failed: %v", err)
	}
	if n := strings.Count(b.Log(), "+"); n < 64 {
		t.Errorf("%d messages charged, want the 64 ModelInfer ones: %s", n, b.Log())
	}
	// Answered, their messages were whole: only the idle streams are
	// open, and they hold nothing.
	if b.InUse() != 0 {
		t.Errorf("%d bytes charged with 64 idle streams open, want 0", b.InUse())
	}
	cancel()
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "everything given back", func() bool { return b.InUse() == 0 })
}

// refusedBusy opens a ModelInfer RPC on h and checks that it is refused
// RESOURCE_EXHAUSTED at its header.
func refusedBusy(t *testing.T, h *hostile.H2, addr, what string) {
	t.Helper()
	id, err := h.Open(addr, inferMethod)
	if err != nil {
		t.Fatal(err)
	}
	if how, err := h.End(id); how != "grpc ResourceExhausted" {
		t.Fatalf("%s ended %q (%v), want grpc ResourceExhausted", what, how, err)
	}
}

// A refused RPC's message holds nothing, even with the budget full: its
// header reaches gRPC, which refuses it, and its debt ends with it.
func TestRefusedRPCDoesNotWaitForRoom(t *testing.T) {
	const maxMsg = 1000
	b := &budgettest.Ledger{Limit: maxMsg}
	b.ReserveBody(maxMsg) // full
	h, addr := hostileConn(t, Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b,
		Timeouts: Timeouts{Message: time.Minute}, Admit: func(*fasthttp.RequestHeader) (int, string, bool) {
			return fasthttp.StatusUnauthorized, "missing API key", false
		}})
	for i := range 3 { // the connection is read on after each
		start := time.Now()
		id := coalesced(t, h, func() uint32 { return sendMessageStart(t, h, addr, inferMethod, maxMsg) })
		if how := ended(t, h, id, start, 10*time.Second); how != "grpc Unauthenticated" {
			t.Fatalf("RPC %d ended %q, want grpc Unauthenticated", i, how)
		}
	}
	if b.InUse() != maxMsg {
		t.Errorf("%d bytes charged, want the %d reserved before", b.InUse(), maxMsg)
	}
}

// coalesced runs write with h's frames gathered, then writes them to its
// connection at once, so that the server reads them in one read.
func coalesced(t *testing.T, h *hostile.H2, write func() uint32) uint32 {
	t.Helper()
	var buf bytes.Buffer
	f := h.Framer
	h.Framer = http2.NewFramer(&buf, nil)
	id := write()
	h.Framer = f
	if _, err := h.Conn.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return id
}

// The limit of waiting for room by not reading: three messages sent at
// once on one connection, interleaved as a client's writer sends them,
// with room for two. The third waits, and with it the rest of the first
// two, which is behind it on the socket: the connection waits on itself,
// and nothing but Timeouts.Message ends it. Each RPC ends by then (its
// own message timeout, or the connection's close), and nothing stays
// charged.
func TestInterleavedMessagesOverTheBudgetEndAtTheMessageTimeout(t *testing.T) {
	const maxMsg, timeout = 1000, 500 * time.Millisecond
	b := &budgettest.Ledger{Limit: 2 * maxMsg}
	h, addr := hostileConn(t, Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b,
		Timeouts: Timeouts{Message: timeout, StreamIdle: time.Minute}})
	open := map[uint32]bool{}
	for range 3 {
		open[sendMessageStart(t, h, addr, inferMethod, 900)] = true
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the third message waiting for room", func() bool { return b.Waiting() == 1 })
	start := time.Now()
	for id := range open {
		if err := h.Framer.WriteData(id, true, make([]byte, 890)); err != nil {
			t.Fatal(err)
		}
	}
	var hows []string
	for len(open) > 0 {
		f, err := h.Framer.ReadFrame()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("streams %v still open after %v", open, time.Since(start))
		}
		if err != nil {
			hows = append(hows, err.Error())
			break
		}
		if id, how := hostile.Outcome(f); how != "" && open[id] {
			delete(open, id)
			hows = append(hows, how)
		}
	}
	if took := time.Since(start); took > timeout+5*time.Second {
		t.Errorf("the RPCs ended after %v (%v), want about the %v message timeout", took, hows, timeout)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "everything given back", func() bool { return b.InUse() == 0 })
	t.Logf("ended %v after %v: %s", hows, time.Since(start), b.Log())
}

// drained reads h's frames until the server's last GOAWAY, answering the
// ping gRPC sends between its two, and returns the last stream it will
// process.
func drained(t *testing.T, h *hostile.H2) uint32 {
	t.Helper()
	for range 100 {
		f, err := h.Framer.ReadFrame()
		if err != nil {
			t.Fatalf("before the last GOAWAY: %v", err)
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := h.Framer.WritePing(true, f.Data); err != nil {
					t.Fatal(err)
				}
			}
		case *http2.GoAwayFrame:
			if f.LastStreamID != 1<<31-1 {
				return f.LastStreamID
			}
		}
	}
	t.Fatal("no last GOAWAY within 100 frames")
	return 0
}

// A draining connection (the server's stop, or its idle timeout, with a
// stream still open) is kept open by its streams, and gRPC ignores the
// streams opened past its last GOAWAY, silently: no reset, no trailers,
// no watchdog. Their messages must not be charged, or a client that
// keeps one stream alive would hold the budget with them for as long
// as it likes.
func TestStreamsPastGoAwayAreNotCharged(t *testing.T) {
	const maxMsg = 1000
	b := &budgettest.Ledger{Limit: 10 * maxMsg}
	o := Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b,
		Timeouts: Timeouts{Message: time.Minute, StreamIdle: time.Minute}}
	s, addr := listen(t, o)
	h, err := hostile.DialH2(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_ = h.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	keeper, err := h.Open(addr, streamMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := answersPing(h.Framer); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan bool, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	if last := drained(t, h); last != keeper {
		t.Fatalf("the last GOAWAY keeps stream %d, want the open one, %d", last, keeper)
	}
	for range 3 {
		sendMessageStart(t, h, addr, inferMethod, maxMsg)
	}
	if err := answersPing(h.Framer); err != nil { // the server has read them
		t.Fatal(err)
	}
	if b.InUse() != 0 {
		t.Errorf("%d bytes charged for streams gRPC ignores (%s), want 0", b.InUse(), b.Log())
	}
	h.Close()
	if !<-stopped {
		t.Error("the stop did not drain")
	}
}
