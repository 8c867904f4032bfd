package grpcfront

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/handoff"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

// An infer answer is the worker's HTTP body, whole in the master, and
// gRPC sends it after the handler returns: its bytes wait on HTTP/2 flow
// control for as long as the client gives no window (a unary RPC's
// stream ends, for the handler, once its answer is queued). So an answer
// over chargedAnswerMin is charged to the body budget (Options.Budget)
// from the moment ServeInternal gives it (its request's body given back)
// until gRPC is done with its bytes: written to the socket, dropped with
// its stream (a reset) or its connection (closed). Its bytes are not
// copied into a message: the codec (answerCodec) encodes the message
// around slices of the body, and the body's charge is released when gRPC
// frees the last of them (answerHold is the buffers' pool). An answer not
// written within Timeouts.Write closes its connection, as an HTTP answer
// not taken does; without it an answer queued behind a window that never
// opens would hold its charge for ever. An answer that does not fit is
// RESOURCE_EXHAUSTED.

// chargedAnswerMin is the largest answer sent without a charge, as the
// HTTP front's: they cost at most max_concurrent_streams of them a
// connection.
const chargedAnswerMin = 64 << 10

// answerHold is one answer's charge: its HTTP body, held by gRPC as the
// buffers of the message it becomes, and released once, when gRPC frees
// them or the connection closes.
type answerHold struct {
	body   []byte
	start  int // where the outputs' bytes begin in body
	charge *budget.Charge
	conn   *h2conn.Entry
	once   sync.Once
	timer  *time.Timer // closes conn when the answer is not written in time
	unsent func() bool // stops the release of an answer whose RPC ends before it is encoded
}

// Get is never called: the pool only takes the body back (Put).
func (h *answerHold) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put is gRPC freeing the answer's last buffer: the charge goes back.
func (h *answerHold) Put(*[]byte) { h.Release() }

// Release gives the charge back, once, and stops the write bound.
func (h *answerHold) Release() {
	h.once.Do(func() {
		if h.timer != nil {
			h.timer.Stop()
		}
		h.charge.Release()
		h.conn.Forget(h)
	})
}

var _ mem.BufferPool = (*answerHold)(nil)

// heldAnswers are the answers charged and not yet encoded, by message,
// for the codec; each leaves when it is encoded or its RPC ends.
type heldAnswers struct {
	budget Budget
	write  time.Duration // Timeouts.Write: an answer held longer closes its connection
	m      handoff.Map[pb.ModelInferResponse, *answerHold]
}

// hold charges the answer body (outputs from start) that resp was
// decoded from, until gRPC is done with it; it refuses one with no room.
// charge is the one the Handler took from the answer's header (see
// Handler), which hold owns from here; nil: the body is charged now, read
// whole already (a Handler that takes none, or an answer of unknown
// length).
func (a *heldAnswers) hold(ctx context.Context, resp *pb.ModelInferResponse, body []byte, start int, charge *budget.Charge) error {
	n := int64(len(body))
	if a == nil || a.budget == nil || n <= chargedAnswerMin {
		charge.Release()
		return nil
	}
	if charge != nil && charge.Bytes() != n {
		charge.Release()
		charge = nil
	}
	var err error
	if charge == nil {
		charge, err = a.budget.ReserveAnswer(n)
	}
	if err != nil {
		return status.Error(codes.ResourceExhausted, fmt.Sprintf("server busy: the answer is %d bytes and answers and request bodies "+
			"in flight fill limits.max_body_bytes_in_flight (one answer may hold at most 7/8 of it); retry later, ask for fewer rows, "+
			"or raise limits.max_body_bytes_in_flight", n))
	}
	h := &answerHold{body: body, start: start, charge: charge, conn: watchdogOf(ctx).connection()}
	if a.write > 0 && h.conn != nil {
		// From now rather than from the send, which follows at once:
		// set before h is shared, so nothing races on it.
		h.timer = time.AfterFunc(a.write, h.conn.Close)
	}
	if !h.conn.Keep(h) {
		h.Release()
		return status.Error(codes.Unavailable, "the connection was closed before the answer was sent")
	}
	// An answer never encoded (its RPC ended first) goes back with it.
	h.unsent = context.AfterFunc(ctx, func() {
		if h := a.take(resp); h != nil {
			h.Release()
		}
	})
	a.m.Store(resp, h)
	if ctx.Err() != nil && a.take(resp) != nil { // ended before the Store
		h.Release()
	}
	return nil
}

// take is the charge of resp, now being encoded (nil: none).
func (a *heldAnswers) take(resp *pb.ModelInferResponse) *answerHold {
	if a == nil || resp == nil {
		return nil
	}
	h, ok := a.m.Take(resp)
	if !ok {
		return nil
	}
	h.unsent() // a stream's context outlives its answers: let it drop this one
	return h
}

// encode is resp's wire form around the body's bytes: its fields but
// raw_output_contents marshalled, then each raw_output_contents entry
// (field 6) as its tag, its length and a slice of the body, which
// protobuf reads as the same message. Inside a ModelStreamInferResponse
// (outer non-nil), that message's other fields come first, then the
// answer as its infer_response (field 2).
func (h *answerHold) encode(resp *pb.ModelInferResponse, outer *pb.ModelStreamInferResponse) (mem.BufferSlice, error) {
	root := mem.NewBuffer(&h.body, h)
	defer root.Free() // the slices hold it on
	raws := resp.RawOutputContents
	resp.RawOutputContents = nil
	head, err := proto.Marshal(resp)
	resp.RawOutputContents = raws
	if err != nil {
		return nil, err
	}
	size := len(head)
	for _, raw := range raws {
		size += protowire.SizeTag(6) + protowire.SizeBytes(len(raw))
	}
	if outer != nil {
		if head, err = outerHead(outer, head, size); err != nil {
			return nil, err
		}
	}
	out := mem.BufferSlice{mem.SliceBuffer(head)}
	off := h.start
	for _, raw := range raws {
		if off+len(raw) > len(h.body) {
			out.Free()
			return nil, fmt.Errorf("raw_output_contents past the answer's %d bytes", len(h.body))
		}
		out = append(out, mem.SliceBuffer(protowire.AppendVarint(protowire.AppendTag(nil, 6, protowire.BytesType), uint64(len(raw)))),
			root.Slice(off, off+len(raw)))
		off += len(raw)
	}
	return out, nil
}

// outerHead is outer's fields but infer_response, then the tag and
// length of an infer_response of size bytes and the first of them, head.
func outerHead(outer *pb.ModelStreamInferResponse, head []byte, size int) ([]byte, error) {
	inner := outer.InferResponse
	outer.InferResponse = nil
	b, err := proto.Marshal(outer)
	outer.InferResponse = inner
	if err != nil {
		return nil, err
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.BytesType), uint64(size))
	return append(b, head...), nil
}
