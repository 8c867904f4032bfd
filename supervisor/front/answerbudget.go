package front

import (
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront"
)

// A worker's answer is held whole in the master until the front has
// written it to the client, which may take up to limits.write_timeout
// (60s by default): a client that sends requests and never reads their
// answers held them all that long, and an answer can be several times
// its request (JSON text for binary tensors). So an answer is charged to
// the body budget (limits.max_body_bytes_in_flight) from its header
// until fasthttp has written it or given up on the connection:
//
//   - The lb asks answerGate about the worker's answer once its header is
//     in, before a byte of its body is read (lb.AnswerGate). The answer
//     reserves its declared Content-Length in place of its request's
//     charge (the request has been sent by then; its buffer is freed when
//     the handler finishes, kept till then for the poison quarantine).
//     One that does not fit is never read: the lb closes the worker's
//     connection (the worker sees the hang-up and stops) and holdAnswer
//     answers 503 with Retry-After, or 500 for one larger than the
//     budget could ever hold (the per-answer cap: seven eighths of the
//     budget), counted (BodyCounts.AnswersRefused).
//   - holdAnswer then hands the charge to the response's body stream
//     (heldAnswer), which fasthttp closes whether written or not; its
//     Close gives the bytes back. One charge from header to write.
//   - An answer of unknown length (chunked; the prep workers always
//     declare one) is read whole, then charged by its length the same
//     way, or replaced by the same refusal.
//
// Answers up to chargedAnswerMin are not charged: they cost at most
// max_connections times that, and mostly sit in the kernel's socket
// buffer rather than the master's heap.

// chargedAnswerMin is the largest answer written without a charge.
const chargedAnswerMin = 64 << 10

// heldAnswer is an answer body charged to the budget, as the response's
// body stream. It hands its bytes to fasthttp's writer in one piece
// (WriteTo) and gives the charge back on Close.
type heldAnswer struct {
	b      []byte         // what is left to write
	charge *budget.Charge // released by Close, once whoever calls it
}

func (h *heldAnswer) Read(p []byte) (int, error) {
	if len(h.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, h.b)
	h.b = h.b[n:]
	return n, nil
}

// WriteTo writes what is left of the answer to w.
func (h *heldAnswer) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(h.b)
	h.b = h.b[n:]
	return int64(n), err
}

// Close gives the answer's charge back and drops its bytes.
func (h *heldAnswer) Close() error {
	h.charge.Release()
	h.b = nil
	return nil
}

// errAnswerBudget is answerGate's refusal; holdAnswer answers it with the
// verdict's answerRefusal.
var errAnswerBudget = errors.New("the answer does not fit the master's body budget (limits.max_body_bytes_in_flight)")

// answerGate is the lb's AnswerGate for v's request (see above). It runs
// on the handler's goroutine.
func (f *Front) answerGate(v *verdict) lb.AnswerGate {
	return func(h *fasthttp.ResponseHeader) error {
		n := int64(h.ContentLength())
		if n <= chargedAnswerMin { // small, or of unknown length: see holdAnswer
			return nil
		}
		f.releaseCharges(v)
		c, err := f.adm.Bodies().ReserveAnswer(n)
		if err != nil {
			r := f.answerRefusal(n, err)
			v.answerRefusal = &r
			return errAnswerBudget
		}
		v.answerCharge = c
		return nil
	}
}

// holdAnswer finishes v's request (its body and charge go back: a request
// and its answer are not held together) and holds the answer in ctx
// under the body budget until it is written: with the charge answerGate
// took, or, for an answer of unknown length, one taken now. An answer
// that did not fit is replaced by its refusal.
func (f *Front) holdAnswer(ctx *fasthttp.RequestCtx, v *verdict) {
	charge := v.answerCharge
	v.answerCharge = nil
	f.finish(v)
	if v.answerRefusal != nil {
		f.bodies.answersRefused.Add(1)
		f.refuseAnswer(ctx, *v.answerRefusal)
		return
	}
	n := int64(len(ctx.Response.Body()))
	if charge != nil && n == charge.Bytes() && !ctx.Response.IsBodyStream() {
		f.streamAnswer(ctx, n, charge)
		return
	}
	charge.Release() // the exchange failed after the header: ctx holds its error
	if n <= chargedAnswerMin || ctx.Response.IsBodyStream() {
		return
	}
	charge, err := f.adm.Bodies().ReserveAnswer(n)
	if err != nil {
		f.bodies.answersRefused.Add(1)
		f.refuseAnswer(ctx, f.answerRefusal(n, err))
		return
	}
	f.streamAnswer(ctx, n, charge)
}

// handAnswer is holdAnswer for ServeInternal: the RPC front writes the
// answer and holds it until gRPC has (grpcfront.Handler), so the charge
// answerGate took from the answer's header goes to it with the answer,
// as ctx's user value grpcfront.AnswerChargeKey. Charging from the
// header rather than once the body is read matters for the gRPC
// clients that never read their answers: with the budget full, each
// further large answer was read whole (uncounted) and only then refused,
// so the master read and dropped a worker's answer per refused RPC, as
// garbage the GC let pile up to the memory limit, and counted none of
// the answers in flight (grpc-unread-large: RSS rose past the budget).
// An answer refused from its header is never read: RESOURCE_EXHAUSTED
// (503 with Retry-After), or INTERNAL for one larger than the budget
// could ever hold.
func (f *Front) handAnswer(ctx *fasthttp.RequestCtx, v *verdict) {
	charge := v.answerCharge
	v.answerCharge = nil
	if v.answerRefusal != nil {
		f.bodies.answersRefused.Add(1)
		f.refuseAnswer(ctx, *v.answerRefusal)
		return
	}
	if charge == nil {
		return
	}
	if ctx.Response.StatusCode() != fasthttp.StatusOK || ctx.Response.IsBodyStream() || int64(len(ctx.Response.Body())) != charge.Bytes() {
		charge.Release() // the exchange failed after the header: ctx holds its error
		return
	}
	ctx.SetUserValue(grpcfront.AnswerChargeKey, charge)
}

// streamAnswer makes the answer in ctx, whose n bytes charge holds, the
// response's body stream, which gives the charge back once fasthttp is
// done with it.
func (f *Front) streamAnswer(ctx *fasthttp.RequestCtx, n int64, charge *budget.Charge) {
	b := ctx.Response.Body()
	// The bytes leave the response's (pooled) buffer: the stream owns
	// them now. Body then returns them whether they were the buffer's or
	// set raw, and neither goes back to a pool while the stream reads it.
	ctx.Response.SwapBody(nil)
	ctx.Response.SetBodyStream(&heldAnswer{b: b[:n], charge: charge}, int(n))
}

// answerRefusal is the answer to an answer of n bytes the budget
// refused with err: 503 while others hold it, 500 when it never could
// (over seven eighths of it, the share of large bodies and answers).
func (f *Front) answerRefusal(n int64, err error) admission.Refusal {
	if errors.Is(err, budget.ErrTooLarge) {
		return admission.Refusal{Status: fasthttp.StatusInternalServerError, Msg: fmt.Sprintf(
			"the answer is %d bytes, more than the master may hold for one (7/8 of limits.max_body_bytes_in_flight, %d bytes): ask for binary outputs or fewer rows, or raise limits.max_body_bytes_in_flight",
			n, f.adm.Bodies().Limit())}
	}
	return admission.Refusal{Status: fasthttp.StatusServiceUnavailable, Header: fasthttp.HeaderRetryAfter, Value: "1",
		Msg: "server busy: answers and request bodies in flight fill limits.max_body_bytes_in_flight; retry later"}
}

// refuseAnswer replaces the answer in ctx, headers and all (a worker's
// binary answer carries Inference-Header-Content-Length), with r, under
// the same request id.
func (f *Front) refuseAnswer(ctx *fasthttp.RequestCtx, r admission.Refusal) {
	ctx.Response.SwapBody(nil) // dropped, not pooled: it is as large as it did not fit
	ctx.Response.Reset()
	f.refuse(ctx, r, false)
}
