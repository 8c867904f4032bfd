package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/lb"
)

// hangUpAfter is how long a client waits for the long run before it goes.
const hangUpAfter = 300 * time.Millisecond

// TestClientHangUpStopsTheRun: a client that gives the master no timeout
// (no X-Request-Timeout, no gRPC deadline) and hangs up 300ms into a run
// of about ten seconds, by closing its HTTP connection or cancelling its
// RPC, has its run stopped once the hang-up is seen, not at max_run_time
// (20s): the model's one instance serves a quick request within seconds,
// on the same infer worker, nothing counts as a run timeout, and the
// master counts each as a client-closed request.
func TestClientHangUpStopsTheRun(t *testing.T) {
	in := startSlowInstance(t)
	pid := workerNamed(t, in, "infer-0").PID
	client := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	for i, c := range []struct {
		name   string
		hangUp func() error // sends the long run and goes after hangUpAfter
	}{
		{"http", func() error { return postAndHangUp(in, "/v2/models/slow/infer", slowBody(10_000_000)) }},
		{"grpc", func() error {
			ctx, cancel := context.WithCancel(context.Background())
			defer time.AfterFunc(hangUpAfter, cancel).Stop()
			_, err := client.ModelInfer(ctx, slowRequest(10_000_000))
			cancel()
			if status.Code(err) != codes.Canceled {
				return fmt.Errorf("answered %v, want CANCELED (the client's own)", err)
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			if err := c.hangUp(); err != nil {
				t.Fatalf("a long run whose client hangs up after %s: %v (after %s)", hangUpAfter, err, time.Since(start))
			}
			if code, b, _ := in.post("/v2/models/slow/infer", slowBody(3), nil); code != http.StatusOK {
				t.Fatalf("a quick run after the abandoned one = %d %s, want 200", code, b)
			}
			served := time.Since(start)
			t.Logf("the next request was served %s after the abandoned one was sent", served)
			// The stop takes a poll of the master (100ms), one of the
			// infer worker (20ms) and ONNX Runtime's next node; 5s leaves
			// room for a loaded -race run and is half the unstopped run.
			if served > 5*time.Second {
				t.Fatalf("the next request waited %s: the abandoned run was not stopped (it takes about 10s; max_run_time is 20s)", served)
			}
			want := float64(i + 1)
			polltest.Until(t, 10*time.Second, 50*time.Millisecond, "the master to count the client-closed request", func() bool {
				return scrapeMetrics(t, in)["supervisor_client_closed_requests_total"] == want
			})
		})
	}
	if w := workerNamed(t, in, "infer-0"); w.PID != pid || w.State != "ready" {
		t.Fatalf("infer-0: pid %d state %s, want pid %d still ready (no restart)", w.PID, w.State, pid)
	}
	if got := scrapeMetrics(t, in)[`supervisor_run_timeouts_total{model="slow"}`]; got != 0 {
		t.Errorf("supervisor_run_timeouts_total{model=\"slow\"} = %v, want 0: an abandoned run is no run timeout", got)
	}
}

// TestClientThatStaysIsNotCut: a run of about a second, many of the
// master's polls for a hang-up, whose clients stay (HTTP and gRPC, with no
// timeout) is answered in full, and nothing counts as client-closed.
func TestClientThatStaysIsNotCut(t *testing.T) {
	in := startSlowInstance(t)
	start := time.Now()
	if code, b, _ := in.post("/v2/models/slow/infer", slowBody(1_000_000), nil); code != http.StatusOK {
		t.Fatalf("a run of about a second over HTTP = %d %s (after %s), want 200", code, b, time.Since(start))
	}
	t.Logf("the HTTP run took %s (polled every %s)", time.Since(start), lb.ClientPoll)
	client := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	if _, err := client.ModelInfer(context.Background(), slowRequest(1_000_000)); err != nil {
		t.Fatalf("a run of about a second over gRPC: %v", err)
	}
	if got := scrapeMetrics(t, in)["supervisor_client_closed_requests_total"]; got != 0 {
		t.Errorf("supervisor_client_closed_requests_total = %v, want 0: every client stayed", got)
	}
}

// startSlowInstance serves the SlowSin model (400 nodes) on one infer
// worker with one instance and a max_run_time (20s) above its ten-second
// run.
func startSlowInstance(t *testing.T) *instance {
	slow := writeModel(t, t.TempDir(), "slow", onnxmodel.SlowSin(400))
	return startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		modelItems: fmt.Sprintf("  - {name: slow, path: %s, batching: {max_batch_size: 0, instances: 1}, max_run_time: 20s}\n", slow)})
}

// postAndHangUp posts body with no timeout the master sees and closes the
// connection after hangUpAfter, as a client cancelling its request does.
func postAndHangUp(in *instance, path string, body []byte) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer time.AfterFunc(hangUpAfter, cancel).Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err == nil {
		resp.Body.Close()
		return fmt.Errorf("answered %d before the client hung up", resp.StatusCode)
	}
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the request failed before the hang-up: %w", err)
	}
	return nil
}
