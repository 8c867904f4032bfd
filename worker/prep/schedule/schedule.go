package schedule

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// Set passes the V2 request's scheduling parameters to the infer
// worker. Its "timeout" (Triton: how long the request may wait in the
// queue) becomes the deadline by which it must have started; without one
// it is the upstream timeout, after which nobody waits for the answer.
// The client's own deadline (the master passes X-Request-Timeout on as
// worker.DeadlineHeader) caps both. A request that has started runs to the
// end, bounded by the returned time: when the prep worker stops waiting.
// The master's worker.AloneHeader (a poison suspect) and
// worker.TokenHeader are passed on.
func Set(up *fasthttp.Request, client *fasthttp.RequestHeader, req *v2.InferRequest, upstreamTimeout time.Duration) time.Duration {
	wait := upstreamTimeout
	if d, ok := ClientBudget(client); ok && d < wait {
		wait = d
	}
	total := wait
	if req.Timeout > 0 && req.Timeout < wait {
		wait = req.Timeout
	}
	up.Header.Set(worker.DeadlineHeader, strconv.FormatInt(time.Now().Add(wait).UnixNano(), 10))
	if req.Priority > 0 {
		up.Header.Set(worker.PriorityHeader, strconv.Itoa(req.Priority))
	}
	if client.Peek(worker.AloneHeader) != nil {
		up.Header.Set(worker.AloneHeader, "1")
	}
	if v := client.Peek(worker.TokenHeader); len(v) > 0 {
		up.Header.SetBytesV(worker.TokenHeader, v)
	}
	return total
}

// ClientBudget is the time left before the client's deadline, if the
// master passed one.
func ClientBudget(h *fasthttp.RequestHeader) (time.Duration, bool) {
	ns, err := strconv.ParseInt(string(h.Peek(worker.DeadlineHeader)), 10, 64)
	if err != nil {
		return 0, false
	}
	return max(time.Until(time.Unix(0, ns)), 0), true
}
