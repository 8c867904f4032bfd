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

// internalHeaders are the master's own request headers for the workers,
// which a client may not set.
var internalHeaders = [...]string{
	worker.DeadlineHeader,
	worker.PriorityHeader,
	worker.AloneHeader, // for a poison suspect (quarantine)
	worker.TokenHeader, // what workers record a request by
	sysshm.RefsHeader,  // the regions a prep worker reads
}

// ClientDeadline reads TimeoutHeader into a deadline (zero without one)
// and passes it upstream. Clients may not set the internal scheduling
// headers themselves: those are removed first.
//
// One pass over the headers finds both; the internal ones are deleted
// only when one is there. (Deleting each name and then peeking the
// timeout, each a normalized copy of the name and a scan, was a third of
// the master's header-time decision: 2% of its CPU on metadata GETs.)
func ClientDeadline(h *fasthttp.RequestHeader) (time.Time, error) {
	var timeout []byte
	internal := false
	for k, v := range h.All() {
		switch {
		case isInternal(k):
			internal = true
		case timeout == nil && equalFold(k, TimeoutHeader):
			timeout = v
		}
	}
	if internal {
		for _, name := range internalHeaders {
			h.Del(name)
		}
		timeout = h.Peek(TimeoutHeader) // the deletes moved the values
	}
	raw := strings.TrimSpace(string(timeout))
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

func isInternal(name []byte) bool {
	for _, n := range internalHeaders {
		if equalFold(name, n) {
			return true
		}
	}
	return false
}

// equalFold reports whether the header name b is s, in any case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
