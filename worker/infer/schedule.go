package infer

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/hangup"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// retryAfterSeconds is the Retry-After sent with a 503 from a full queue or
// an expired request. Queues drain in milliseconds to seconds; one second
// is the smallest value the header can say.
const retryAfterSeconds = "1"

// schedule reads the request's priority, deadline, whether it runs
// alone and its token from the headers prep sets (worker.PriorityHeader,
// worker.DeadlineHeader, worker.AloneHeader, worker.TokenHeader), and watches
// its connection for the prep worker giving up (abandonedBy).
func schedule(ctx *fasthttp.RequestCtx, inputs []tensor.Tensor) (batch.Request, error) {
	r := batch.Request{Inputs: inputs, Alone: ctx.Request.Header.Peek(worker.AloneHeader) != nil,
		ID: worker.Token(ctx.Request.Header.Peek(worker.TokenHeader))}
	r.Abandoned, r.Watch = abandonedBy(ctx.Conn())
	if v := ctx.Request.Header.Peek(worker.PriorityHeader); len(v) > 0 {
		p, err := strconv.Atoi(string(v))
		if err != nil {
			return r, errors.New("bad " + worker.PriorityHeader + " header " + strconv.Quote(string(v)))
		}
		r.Priority = p
	}
	if v := ctx.Request.Header.Peek(worker.DeadlineHeader); len(v) > 0 {
		ns, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return r, errors.New("bad " + worker.DeadlineHeader + " header " + strconv.Quote(string(v)))
		}
		r.Deadline = time.Unix(0, ns)
	}
	return r, nil
}

// abandonedBy reports, for a request that came on conn, whether the prep
// worker that sent it has stopped waiting for the answer: its fasthttp
// client closes the connection when its deadline passes (the client's,
// or prep.upstream_timeout), and the kernel closes it when the prep worker
// dies. worker.DeadlineHeader cannot say it: it is when the request must
// have started, earlier than that when the V2 request has a "timeout".
// The batcher is told by watch (an epoll event on conn, hangup.Peer), or
// polls poll when conn cannot be watched: while the request queues it is
// answered unrun as soon as the hang-up is seen (so the prep worker's
// arena slot frees), and while its batch runs, the run stops once every
// request of the batch is abandoned (batch.ErrAbandoned).
func abandonedBy(conn net.Conn) (poll func() bool, watch func(func()) (func(), error)) {
	if conn == nil {
		return nil, nil
	}
	peer := hangup.Peer{Conn: conn}
	return peer.Gone, peer.Watch
}

// submit runs one request through m's batcher. The context is not the
// fasthttp one: that ends when the server starts draining, and a queued
// request must still run then. The request's deadline bounds its wait.
func (m *model) submit(r batch.Request) ([]tensor.Tensor, error) {
	return m.batcher.Submit(context.Background(), r)
}

// replyError answers a failed request with the status its cause calls for:
// 503 with Retry-After when the model is overloaded (queue full, request
// expired in the queue, shutting down), 400 for the request's own faults,
// 500 for the rest; a run stopped at max_run_time is a 500 too (see
// RunTimeoutError), marked with worker.RunTimeoutHeader. A run stopped
// because every request of its batch was abandoned gets 503, which nobody
// reads.
func replyError(ctx *fasthttp.RequestCtx, err error) {
	var rte *RunTimeoutError
	switch {
	case errors.As(err, &rte):
		ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
		ctx.Response.Header.Set(worker.RunTimeoutHeader, rte.Model)
	case errors.Is(err, batch.ErrQueueFull), errors.Is(err, batch.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, batch.ErrClosed),
		errors.Is(err, batch.ErrAbandoned): // nobody reads this one
		ctx.Error(err.Error(), fasthttp.StatusServiceUnavailable)
		// After Error, which resets the response.
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, retryAfterSeconds)
	case errors.Is(err, batch.ErrBadRequest), errors.Is(err, ort.ErrBadInput):
		ctx.Error(err.Error(), fasthttp.StatusBadRequest)
	default:
		ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
	}
}
