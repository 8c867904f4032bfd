package schedule

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
		client   time.Duration // the client's X-Request-Timeout; 0 = none
		wait     time.Duration // the deadline's distance from now
		total    time.Duration // how long prep waits for the infer worker
		priority string
	}{
		{"no parameters: the upstream timeout", v2.InferRequest{}, 0, time.Minute, time.Minute, ""},
		{"a shorter timeout", v2.InferRequest{Timeout: 300 * time.Millisecond, Priority: 2}, 0, 300 * time.Millisecond, time.Minute, "2"},
		{"a longer timeout is capped", v2.InferRequest{Timeout: time.Hour}, 0, time.Minute, time.Minute, ""},
		{"the client's deadline caps both", v2.InferRequest{Timeout: time.Hour}, 2 * time.Second, 2 * time.Second, 2 * time.Second, ""},
		{"a queue timeout within the client's", v2.InferRequest{Timeout: time.Second}, 2 * time.Second, time.Second, 2 * time.Second, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var up fasthttp.Request
			var client fasthttp.RequestHeader
			before := time.Now()
			if tt.client > 0 {
				client.Set(worker.DeadlineHeader, strconv.FormatInt(before.Add(tt.client).UnixNano(), 10))
			}
			total := Set(&up, &client, &tt.req, time.Minute)
			after := time.Now()
			if total > tt.total || total < tt.total-time.Second {
				t.Errorf("prep waits %s, want about %s", total, tt.total)
			}
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

// TestSetSchedulePassesAlone: the master's mark of a poison suspect
// reaches the infer worker; a request without it goes without.
func TestSetSchedulePassesAlone(t *testing.T) {
	for _, alone := range []bool{true, false} {
		var up fasthttp.Request
		var client fasthttp.RequestHeader
		if alone {
			client.Set(worker.AloneHeader, "1")
		}
		Set(&up, &client, &v2.InferRequest{}, time.Minute)
		if got := up.Header.Peek(worker.AloneHeader) != nil; got != alone {
			t.Errorf("sent from the master alone=%v, to the infer worker alone=%v", alone, got)
		}
	}
}
