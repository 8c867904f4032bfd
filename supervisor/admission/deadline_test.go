package admission

import (
	"testing"

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
