package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// TestPoisonAbandonedInTheQueueIsNotRun: poison bodies whose clients hang
// up while they wait in the infer worker's queue (for a preferred batch of
// 3 that never fills, max_queue_delay 10 s), one closing its HTTP
// connection and one cancelling its RPC, leave the queue unrun within the
// hops' polls (lb.ClientPoll, internal/batch abandon.go), long before the
// delay would dispatch them: infer-0 never crashes, and a batch sent after
// them is served. Before, they stayed queued, holding their prep arena
// slots, until dispatch. (An abandoned request still in flight when a
// crash lands is struck: front's TestAbandonedIsStruckByALaterCrash.)
func TestPoisonAbandonedInTheQueueIsNotRun(t *testing.T) {
	dir := t.TempDir()
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"},
		models:   map[string]string{"poisoned": writeModel(t, dir, "poisoned", onnxmodel.ModByXMinus3())},
		batching: map[string]string{"poisoned": "{max_batch_size: 8, max_queue_delay: 10s, preferred_batch_sizes: [3]}"}})
	const path = "/v2/models/poisoned/infer"
	client := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	pid := workerNamed(t, in, "infer-0").PID
	closed := scrapeMetrics(t, in)["supervisor_client_closed_requests_total"]
	abandoned := []func() error{
		func() error { return postAndHangUp(in, path, modBody("1,2,3,4")) },
		cancelRPC(client, 1, 2, 3, 4),
	}
	errs := make(chan error, len(abandoned))
	for _, abandon := range abandoned {
		go func() { errs <- abandon() }()
	}
	const depth = `supervisor_queue_depth{role="infer"}`
	polltest.Until(t, 10*time.Second, 20*time.Millisecond, "both poison bodies to queue in infer-0", func() bool {
		return scrapeMetrics(t, in)[depth] == 2
	})
	for range abandoned {
		if err := <-errs; err != nil {
			t.Fatalf("an abandoned send: %v", err)
		}
	}
	polltest.Until(t, 10*time.Second, 50*time.Millisecond, "the master to abandon the requests", func() bool {
		return scrapeMetrics(t, in)["supervisor_client_closed_requests_total"] == closed+float64(len(abandoned))
	})
	start := time.Now()
	polltest.Until(t, 5*time.Second, 20*time.Millisecond, "the abandoned bodies to leave infer-0's queue before max_queue_delay", func() bool {
		return scrapeMetrics(t, in)[depth] == 0
	})
	if w := workerNamed(t, in, "infer-0"); w.PID != pid || w.State != "ready" {
		t.Fatalf("infer-0 after the abandoned poison bodies: pid %d state %s, want pid %d still ready: they ran", w.PID, w.State, pid)
	}
	wantBatchServed(t, in, path, modBody("5,6,7,8"), modBody("4,5,6,7"), modBody("9,9,9,9"))
	t.Logf("the queue emptied %s after the master abandoned the requests", time.Since(start))
}

// wantBatchServed sends bodies at once (one preferred batch) and wants
// each answered 200.
func wantBatchServed(t *testing.T, in *instance, path string, bodies ...[]byte) {
	t.Helper()
	for _, code := range postAll(in, path, bodies) {
		if code != http.StatusOK {
			t.Fatalf("an innocent body = %d, want 200", code)
		}
	}
}

// cancelRPC sends modBody(xs) over gRPC and cancels the RPC after
// hangUpAfter, as a client giving up does.
func cancelRPC(client pb.GRPCInferenceServiceClient, xs ...int64) func() error {
	return func() error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		defer time.AfterFunc(hangUpAfter, cancel).Stop()
		_, err := client.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "poisoned", Inputs: []*pb.ModelInferRequest_InferInputTensor{{
			Name: "x", Datatype: "INT64", Shape: []int64{1, 4}, Contents: &pb.InferTensorContents{Int64Contents: xs}}}})
		if status.Code(err) != codes.Canceled {
			return fmt.Errorf("the RPC answered %v before its client cancelled it", err)
		}
		return nil
	}
}
