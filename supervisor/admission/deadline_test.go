package admission

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestClientDeadlineDropsInternalHeaders: a client cannot set the headers
// the master sets for the workers. A token of its choosing would make the
// workers record its request under another request's name, so that a
// crash blames (or spares) the wrong one; a region reference of its
// choosing would have the prep worker read another key's region.
func TestClientDeadlineDropsInternalHeaders(t *testing.T) {
	internal := []string{worker.DeadlineHeader, worker.PriorityHeader, worker.AloneHeader, worker.TokenHeader, sysshm.RefsHeader}
	var h fasthttp.RequestHeader
	for _, name := range internal {
		h.Set(name, "1")
		h.Add(name, "2") // twice: neither copy may pass
	}
	if _, err := ClientDeadline(&h); err != nil {
		t.Fatal(err)
	}
	for _, name := range internal {
		if v := h.Peek(name); v != nil {
			t.Errorf("%s: %q left from the client, want it removed", name, v)
		}
	}
}

// TestClientDeadlineReadsTheTimeoutInAnyCase: the timeout is found
// whatever the case of its name as stored, alone or beside an internal
// header the client tried to set (which is removed; the public server
// normalizes names, so that one is stored normalized).
func TestClientDeadlineReadsTheTimeoutInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		name     string
		internal bool
	}{{"X-Request-Timeout", false}, {"x-request-timeout", false}, {"X-REQUEST-TIMEOUT", true}} {
		var h fasthttp.RequestHeader
		if tc.internal {
			h.Set(strings.ToLower(worker.TokenHeader), "forged")
		} else {
			h.DisableNormalizing() // names stay as sent
		}
		h.Set("Accept", "*/*")
		h.Set(tc.name, "2s")
		start := time.Now()
		deadline, err := ClientDeadline(&h)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d := deadline.Sub(start); d < 2*time.Second || d > time.Minute {
			t.Errorf("%s: 2s gave a deadline %v away, want about 2s", tc.name, d)
		}
		if tc.internal && h.Peek(worker.TokenHeader) != nil {
			t.Errorf("%s: the forged internal header was left", tc.name)
		}
	}
}

// BenchmarkClientDeadline is the header-time cost for a request with
// neither a timeout nor internal headers (the common one).
func BenchmarkClientDeadline(b *testing.B) {
	var h fasthttp.RequestHeader
	h.SetMethod("GET")
	h.SetRequestURI("/v2/models/default")
	h.SetHost("127.0.0.1:8000")
	h.Set("Accept", "*/*")
	h.Set("User-Agent", "wrk")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ClientDeadline(&h); err != nil {
			b.Fatal(err)
		}
	}
}
