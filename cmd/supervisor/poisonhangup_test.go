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

// TestPoisonAbandonedIsQuarantined: a poison body whose client hangs up
// before it crashes the infer worker is struck all the same, whether it
// closes its HTTP connection (first round) or cancels its RPC (second
// round: the key is the tensors', the same). Each round batches it
// (abandoned, with an innocent body also abandoned) with a
// third body whose client stays, which keeps the batch running after the
// hang-ups (internal/batch abandon.go), so the crash lands with nobody
// waiting for the poison body. After two such crashes the poison body is
// refused 422 at once, with the worker untouched; the innocent bodies,
// abandoned or not, each in one crash, are served.
func TestPoisonAbandonedIsQuarantined(t *testing.T) {
	dir := t.TempDir()
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"},
		models:   map[string]string{"poisoned": writeModel(t, dir, "poisoned", onnxmodel.ModByXMinus3())},
		batching: map[string]string{"poisoned": "{max_batch_size: 8, max_queue_delay: 10s, preferred_batch_sizes: [3]}"},
		extra:    "limits:\n  poison_threshold: 2\n  poison_ttl: 60s\n"})
	const path = "/v2/models/poisoned/infer"
	bad := modBody("1,2,3,4")
	innocents := [][]byte{modBody("5,6,7,8"), modBody("4,5,6,7"), modBody("9,9,9,9"), modBody("8,8,8,8")}
	client := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	hangUp := func(body []byte) func() error { return func() error { return postAndHangUp(in, path, body) } }
	crashAbandoned(t, in, path, innocents[0], hangUp(bad), hangUp(innocents[1]))
	crashAbandoned(t, in, path, innocents[2], cancelRPC(client, 1, 2, 3, 4), hangUp(innocents[3]))
	pid := workerNamed(t, in, "infer-0").PID
	start := time.Now()
	if code, b, _ := in.post(path, bad, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("the poison body after two crashes with its client gone = %d %s, want 422", code, b)
	}
	took := time.Since(start)
	if w := workerNamed(t, in, "infer-0"); w.PID != pid || w.State != "ready" {
		t.Fatalf("infer-0 after the refused send: pid %d state %s, want pid %d still ready", w.PID, w.State, pid)
	}
	wantBatchServed(t, in, path, innocents[0], innocents[1], innocents[2])
	t.Logf("the quarantined send was refused in %s", took)
}

// crashAbandoned runs the abandon funcs at once, each sending a body by a
// client that hangs up, waits until the master has abandoned them, then
// sends stayer, whose client waits: the three make the model's preferred
// batch, which crashes infer-0 (one is poison); stayer gets 502.
func crashAbandoned(t *testing.T, in *instance, path string, stayer []byte, abandoned ...func() error) {
	t.Helper()
	pid := workerNamed(t, in, "infer-0").PID
	closed := scrapeMetrics(t, in)["supervisor_client_closed_requests_total"]
	errs := make(chan error, len(abandoned))
	for _, abandon := range abandoned {
		go func() { errs <- abandon() }()
	}
	for range abandoned {
		if err := <-errs; err != nil {
			t.Fatalf("an abandoned send: %v", err)
		}
	}
	want := closed + float64(len(abandoned))
	polltest.Until(t, 10*time.Second, 50*time.Millisecond, "the master to abandon the requests", func() bool {
		return scrapeMetrics(t, in)["supervisor_client_closed_requests_total"] == want
	})
	if code, b, _ := in.post(path, stayer, nil); code != http.StatusBadGateway {
		t.Fatalf("the request whose client stayed, batched with the abandoned poison one = %d %s, want 502", code, b)
	}
	waitInferRestarted(t, in, pid)
}

// wantBatchServed sends bodies at once (one preferred batch) and wants
// each answered 200.
func wantBatchServed(t *testing.T, in *instance, path string, bodies ...[]byte) {
	t.Helper()
	for _, code := range postAll(in, path, bodies) {
		if code != http.StatusOK {
			t.Fatalf("an innocent body, in one crash = %d, want 200", code)
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
