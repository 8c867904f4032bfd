package admission

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
	"github.com/supervisor-dev/supervisor/worker"
)

// TimeoutHeader is how a client says how long it will wait for an answer:
// a Go duration ("250ms", "2s") or a number of seconds ("0.5"). The
// deadline travels to the prep worker (its call to the infer worker) and
// on to the infer worker's queue, so work for a client that has given up
// is dropped rather than done.
const TimeoutHeader = "X-Request-Timeout"

// ClientDeadline reads TimeoutHeader into a deadline (zero without one)
// and passes it upstream. Clients may not set the internal scheduling
// headers themselves: those are removed first.
func ClientDeadline(h *fasthttp.RequestHeader) (time.Time, error) {
	h.Del(worker.DeadlineHeader)
	h.Del(worker.PriorityHeader)
	h.Del(worker.AloneHeader) // the master's, for a poison suspect (quarantine)
	h.Del(worker.TokenHeader) // the master's: what workers record a request by
	h.Del(sysshm.RefsHeader)  // the master's: the regions a prep worker reads
	raw := strings.TrimSpace(string(h.Peek(TimeoutHeader)))
	if raw == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		secs, ferr := strconv.ParseFloat(raw, 64)
		if ferr != nil || secs > 1e9 {
			return time.Time{}, fmt.Errorf("%s: %q is not a duration (use 250ms, 2s or a number of seconds)", TimeoutHeader, raw)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%s: %q is not positive", TimeoutHeader, raw)
	}
	deadline := time.Now().Add(d)
	h.Set(worker.DeadlineHeader, strconv.FormatInt(deadline.UnixNano(), 10))
	return deadline, nil
}
