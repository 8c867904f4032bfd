package prep

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// setSchedule passes the V2 request's scheduling parameters to the infer
// worker. Its "timeout" (Triton: how long the request may wait in the
// queue) becomes the deadline by which it must have started; without one
// it is the upstream timeout, after which nobody waits for the answer.
// A request that has started runs to the end, bounded by upstream_timeout.
func setSchedule(up *fasthttp.Request, req *v2.InferRequest, upstreamTimeout time.Duration) {
	wait := upstreamTimeout
	if req.Timeout > 0 && req.Timeout < wait {
		wait = req.Timeout
	}
	up.Header.Set(worker.DeadlineHeader, strconv.FormatInt(time.Now().Add(wait).UnixNano(), 10))
	if req.Priority > 0 {
		up.Header.Set(worker.PriorityHeader, strconv.Itoa(req.Priority))
	}
}
