package prep

import (
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

func TestSetSchedule(t *testing.T) {
	tests := []struct {
		name     string
		req      v2.InferRequest
		wait     time.Duration // the deadline's distance from now
		priority string
	}{
		{"no parameters: the upstream timeout", v2.InferRequest{}, time.Minute, ""},
		{"a shorter timeout", v2.InferRequest{Timeout: 300 * time.Millisecond, Priority: 2}, 300 * time.Millisecond, "2"},
		{"a longer timeout is capped", v2.InferRequest{Timeout: time.Hour}, time.Minute, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var up fasthttp.Request
			before := time.Now()
			setSchedule(&up, &tt.req, time.Minute)
			after := time.Now()
			ns, err := strconv.ParseInt(string(up.Header.Peek(worker.DeadlineHeader)), 10, 64)
			if err != nil {
				t.Fatalf("deadline header: %v", err)
			}
			if d := time.Unix(0, ns); d.Before(before.Add(tt.wait)) || d.After(after.Add(tt.wait)) {
				t.Errorf("deadline %v, want %s from now", d, tt.wait)
			}
			if got := string(up.Header.Peek(worker.PriorityHeader)); got != tt.priority {
				t.Errorf("priority header %q, want %q", got, tt.priority)
			}
		})
	}
}
