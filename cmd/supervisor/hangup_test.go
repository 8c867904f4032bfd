package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/lb"
)

// hangUpAfter is how long a client that hangs up waits for a long run
// (TestAbandonedRunIsStopped) before it goes.
const hangUpAfter = 300 * time.Millisecond

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
