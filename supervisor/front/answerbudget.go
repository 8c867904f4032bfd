package front

import (
	"fmt"
	"io"
	"sync"

	"github.com/valyala/fasthttp"
)

// The lb reads a worker's whole answer into the master's memory before
// the front writes it to the client, and that write may take up to
// limits.write_timeout (60s by default): a client that sends requests
// and never reads their answers held them all that long, uncounted, and
// an answer can be several times its request (JSON text for binary
// tensors). So an answer is charged to the body budget
// (limits.max_body_bytes_in_flight) once its request's body is given
// back, and holds it until fasthttp has written it or given up on the
// connection: the body becomes a stream (heldAnswer) that fasthttp
// closes either way, and its Close gives the bytes back. An answer that
// does not fit is replaced by a 503 with Retry-After; one larger than
// the budget could ever hold by a 500 that says what to change.
//
// Answers up to chargedAnswerMin are not charged: they cost at most
// max_connections times that, and mostly sit in the kernel's socket
// buffer rather than the master's heap.

// chargedAnswerMin is the largest answer written without a charge.
const chargedAnswerMin = 64 << 10

// heldAnswer is an answer body charged to the budget, as the response's
// body stream. It hands its bytes to fasthttp's writer in one piece
// (WriteTo) and gives the charge back on Close, once.
type heldAnswer struct {
	b      []byte // what is left to write
	n      int64  // the charge
	budget *bodyBudget
	once   sync.Once
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
	h.once.Do(func() {
		h.budget.release(h.n, largePart(h.n, h.n))
		h.b = nil
	})
	return nil
}

// holdAnswer charges the answer in ctx to the body budget until it is
// written (see above), or replaces it with a refusal when it does not fit.
// The request's own body must have been given back (finish) first: a
// request and its answer are not held together.
func (f *Front) holdAnswer(ctx *fasthttp.RequestCtx, limit int64) {
	n := int64(len(ctx.Response.Body()))
	if n <= chargedAnswerMin || ctx.Response.IsBodyStream() {
		return
	}
	if !f.budget.reserve(n, n, limit) {
		f.refuseAnswer(ctx, answerRefusal(n, limit))
		return
	}
	b := ctx.Response.Body()
	// The bytes leave the response's (pooled) buffer: the stream owns
	// them now. Body then returns them whether they were the buffer's or
	// set raw, and neither goes back to a pool while the stream reads it.
	ctx.Response.SwapBody(nil)
	ctx.Response.SetBodyStream(&heldAnswer{b: b[:n], n: n, budget: &f.budget}, int(n))
}

// answerRefusal is the answer to an answer of n bytes that did not fit a
// budget of limit bytes: 503 while others hold it, 500 when it never
// could (over seven eighths of it, the share of large bodies).
func answerRefusal(n, limit int64) refusal {
	if n > limit-limit/8 {
		return refusal{status: fasthttp.StatusInternalServerError, msg: fmt.Sprintf(
			"the answer is %d bytes, more than the master may hold for one (7/8 of limits.max_body_bytes_in_flight, %d bytes): ask for binary outputs or fewer rows, or raise limits.max_body_bytes_in_flight",
			n, limit)}
	}
	return refusal{status: fasthttp.StatusServiceUnavailable, header: fasthttp.HeaderRetryAfter, value: "1",
		msg: "server busy: answers and request bodies in flight fill limits.max_body_bytes_in_flight; retry later"}
}

// refuseAnswer replaces the answer in ctx, headers and all (a worker's
// binary answer carries Inference-Header-Content-Length), with r, under
// the same request id.
func (f *Front) refuseAnswer(ctx *fasthttp.RequestCtx, r refusal) {
	ctx.Response.SwapBody(nil) // dropped, not pooled: it is as large as it did not fit
	ctx.Response.Reset()
	f.refuse(ctx, r, false)
}
