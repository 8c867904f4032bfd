package infer

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/worker"
)

func TestReplyErrorStatus(t *testing.T) {
	tests := []struct {
		err        error
		status     int
		retryAfter string
	}{
		{fmt.Errorf("model %q: %w", "m", batch.ErrQueueFull), 503, "1"},
		{fmt.Errorf("model %q: %w", "m", batch.ErrTimeout), 503, "1"},
		{fmt.Errorf("model %q: %w", "m", batch.ErrClosed), 503, "1"},
		{fmt.Errorf("%w: too many rows", batch.ErrBadRequest), 400, ""},
		{fmt.Errorf("ONNX Runtime failed"), 500, ""},
	}
	for _, tt := range tests {
		var ctx fasthttp.RequestCtx
		replyError(&ctx, tt.err)
		if got := ctx.Response.StatusCode(); got != tt.status {
			t.Errorf("%v: status %d, want %d", tt.err, got, tt.status)
		}
		if got := string(ctx.Response.Header.Peek("Retry-After")); got != tt.retryAfter {
			t.Errorf("%v: Retry-After %q, want %q", tt.err, got, tt.retryAfter)
		}
		if got := string(ctx.Response.Body()); got != tt.err.Error() {
			t.Errorf("body %q, want the error %q", got, tt.err)
		}
	}
}

func TestSchedule(t *testing.T) {
	deadline := time.Unix(1700000000, 123456789)
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set(worker.PriorityHeader, "3")
	ctx.Request.Header.Set(worker.DeadlineHeader, strconv.FormatInt(deadline.UnixNano(), 10))
	ctx.Request.Header.Set(worker.AloneHeader, "1")
	r, err := schedule(&ctx, nil)
	if err != nil || r.Priority != 3 || !r.Deadline.Equal(deadline) || !r.Alone {
		t.Errorf("schedule = %+v, %v; want priority 3, deadline %v, alone", r, err, deadline)
	}
	var none fasthttp.RequestCtx
	if r, err := schedule(&none, nil); err != nil || r.Priority != 0 || !r.Deadline.IsZero() || r.Alone {
		t.Errorf("schedule without headers = %+v, %v; want the defaults", r, err)
	}
	var bad fasthttp.RequestCtx
	bad.Request.Header.Set(worker.PriorityHeader, "high")
	if _, err := schedule(&bad, nil); err == nil {
		t.Error("schedule accepted priority \"high\"")
	}
}

func TestBatchConfig(t *testing.T) {
	if got := batchConfig(nil); got.MaxBatchSize != 0 || got.MaxQueueSize != 0 || got.Instances != 0 {
		t.Errorf("batchConfig(nil) = %+v, want the zero Config (batching off, defaults)", got)
	}
	b := &worker.Batching{MaxBatchSize: 8, MaxQueueDelay: time.Millisecond, PreferredBatchSizes: []int{4, 8}, MaxQueueSize: 16, Instances: 2}
	got := batchConfig(b)
	if got.MaxBatchSize != 8 || got.MaxQueueDelay != time.Millisecond || len(got.PreferredBatchSizes) != 2 || got.MaxQueueSize != 16 || got.Instances != 2 {
		t.Errorf("batchConfig(%+v) = %+v", b, got)
	}
}
