package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/worker"
)

// slowBody is a V2 request of the SlowSin model: n floats through each of
// its nodes.
func slowBody(n int) []byte {
	return []byte(fmt.Sprintf(`{"inputs":[{"name":"n","datatype":"INT64","shape":[],"data":[%d]}]}`, n))
}

// TestRunPastMaxRunTimeIsStopped sends a request whose run would take
// about ten seconds (2000 nodes of 1e6 sines, some 4ms a node on a loaded
// 2-core VM) to a model with max_run_time 300ms: it is answered 500
// naming the model and the bound well within the client's timeout, the
// next request is served by the same infer worker (no restart), the run
// timeout is counted, and a third send of the same body, after
// limits.poison_threshold strikes, is refused 422 without reaching the
// worker. Nodes are short so that terminate stops the run within its 1s
// grace however loaded the machine: a node of 1e7 sines could outlast it,
// and the worker would exit as wedged (TestWedgedRunReplacesTheWorker's
// path, a 502), not stop the run.
func TestRunPastMaxRunTimeIsStopped(t *testing.T) {
	dir := t.TempDir()
	slow := writeModel(t, dir, "slow", onnxmodel.SlowSin(2000))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		modelItems: fmt.Sprintf("  - {name: slow, path: %s, batching: {max_batch_size: 0}, max_run_time: 300ms}\n", slow),
		extra:      "limits:\n  poison_threshold: 2\n  poison_ttl: 1m\n"})
	const path = "/v2/models/slow/infer"
	quick, long := slowBody(3), slowBody(1_000_000)
	wantServed := func(pid int) {
		t.Helper()
		if code, b, _ := in.post(path, quick, nil); code != http.StatusOK {
			t.Fatalf("a quick run = %d %s, want 200", code, b)
		}
		if w := workerNamed(t, in, "infer-0"); w.PID != pid || w.State != "ready" {
			t.Fatalf("infer-0: pid %d state %s, want pid %d still ready (no restart)", w.PID, w.State, pid)
		}
	}
	pid := workerNamed(t, in, "infer-0").PID
	wantServed(pid)
	for i := 1; i <= 2; i++ {
		start := time.Now()
		code, b, hdr := in.post(path, long, nil)
		took := time.Since(start)
		if code != http.StatusInternalServerError || !strings.Contains(string(b), `model \"slow\"`) ||
			!strings.Contains(string(b), "max_run_time of 300ms") || !strings.HasPrefix(string(b), `{"error":`) {
			t.Fatalf("long run %d = %d %s, want 500 with a V2 error naming the model and its max_run_time", i, code, b)
		}
		if took > 5*time.Second {
			t.Errorf("long run %d answered after %s: max_run_time is 300ms, the run unstopped takes about 10s", i, took)
		}
		if hdr.Get(worker.RunTimeoutHeader) != "" {
			t.Errorf("the client sees the internal header %s", worker.RunTimeoutHeader)
		}
		t.Logf("long run %d answered %d in %s", i, code, took)
		wantServed(pid)
	}
	code, b, _ := in.post(path, long, nil)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "max_run_time") {
		t.Fatalf("third long send = %d %s, want 422 (quarantined after two run timeouts)", code, b)
	}
	wantServed(pid)
	m := scrapeMetrics(t, in)
	if got := m[`supervisor_run_timeouts_total{model="slow"}`]; got != 2 {
		t.Errorf("supervisor_run_timeouts_total{model=\"slow\"} = %v, want 2", got)
	}
	if got := m[`supervisor_poison_quarantined_total{model="slow"}`]; got != 1 {
		t.Errorf("supervisor_poison_quarantined_total{model=\"slow\"} = %v, want 1", got)
	}
	if out, err := in.cli("status"); err != nil || !strings.Contains(out, "RUN TIMEOUTS slow: 2 requests") {
		t.Errorf("supervisor status (%v) does not show the run timeouts:\n%s", err, out)
	}
}

// TestWedgedRunReplacesTheWorker: a run inside one MatMul node of seconds
// cannot be terminated (ONNX Runtime checks between nodes), so a second
// (the grace, at least) after max_run_time the infer worker exits: the
// client gets the defined 502 well before the node would have ended, and
// the master replaces the worker, which serves again.
func TestWedgedRunReplacesTheWorker(t *testing.T) {
	dir := t.TempDir()
	mm := writeModel(t, dir, "mm", onnxmodel.SquareMatMul())
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		modelItems: fmt.Sprintf("  - {name: mm, path: %s, batching: {max_batch_size: 0}, max_run_time: 500ms}\n", mm)})
	const path = "/v2/models/mm/infer"
	pid := workerNamed(t, in, "infer-0").PID
	start := time.Now()
	// 2·5000³ flops in one node: seconds on one core.
	code, b, _ := in.post(path, slowBody(5000), nil)
	took := time.Since(start)
	if code == http.StatusInternalServerError && strings.Contains(string(b), "max_run_time") {
		t.Skipf("the MatMul node ended within max_run_time and its grace (%s) on this machine: nothing was wedged", took)
	}
	if code != http.StatusBadGateway || !strings.Contains(string(b), `serving model \"mm\" exited during this request`) {
		t.Fatalf("a run wedged in one node = %d %s (after %s), want 502: the worker exits", code, b, took)
	}
	waitInferRestarted(t, in, pid)
	if code, b, _ := in.post(path, slowBody(2), nil); code != http.StatusOK {
		t.Fatalf("a quick run on the replacement = %d %s, want 200", code, b)
	}
	if !strings.Contains(in.log.String(), "did not stop when ONNX Runtime was told to terminate it") {
		t.Error("the log does not say why the worker exited")
	}
	t.Logf("the wedged run was answered after %s", took)
}

// TestAbandonedRunIsStopped: a run of about ten seconds whose client gives
// up on it 300ms in, by its own timeout (HTTP's X-Request-Timeout, a gRPC
// deadline) or by hanging up with no timeout the master knows of
// (closing its HTTP connection, cancelling its RPC), is stopped once
// nobody waits for it, not at the model's max_run_time (20s): the model's
// one instance serves a quick request within seconds, on the same infer
// worker, nothing counts as a run timeout, and each hang-up counts as a
// client-closed request.
func TestAbandonedRunIsStopped(t *testing.T) {
	in := startSlowInstance(t)
	pid := workerNamed(t, in, "infer-0").PID
	client := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	long := slowBody(10_000_000)
	for _, c := range []struct {
		name    string
		closed  closedCount  // how the master may count it client-closed
		abandon func() error // sends the long run and gives up after 300ms
	}{
		{"http timeout", countedNever, func() error {
			if code, b, _ := in.post("/v2/models/slow/infer", long, map[string]string{"X-Request-Timeout": "300ms"}); code != http.StatusGatewayTimeout {
				return fmt.Errorf("answered %d %s, want 504", code, b)
			}
			return nil
		}},
		{"grpc deadline", countedMaybe, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			return wantCode(ctx, client, codes.DeadlineExceeded)
		}},
		{"http hang-up", countedOnce, func() error { return postAndHangUp(in, "/v2/models/slow/infer", long) }},
		{"grpc cancel", countedOnce, func() error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			defer time.AfterFunc(hangUpAfter, cancel).Stop()
			return wantCode(ctx, client, codes.Canceled)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := scrapeMetrics(t, in)["supervisor_client_closed_requests_total"]
			wantRunStopped(t, in, c.name, c.abandon)
			wantClosedCount(t, in, c.closed, before)
		})
	}
	wantNoRestartNoRunTimeout(t, in, pid)
}

// closedCount is how many client-closed requests a case may add.
type closedCount int

const (
	countedNever closedCount = iota // the request's own timeout answers it (504)
	countedOnce                     // a hang-up: counted, once
	// A gRPC client whose deadline passes resets its stream (RST_STREAM
	// CANCEL) as its own timer fires: the master sees a cancelled RPC,
	// a hang-up, when that reset comes before the master's timer for
	// the same deadline (set on the request's arrival, so a little
	// later), and a timeout otherwise. Either is true of the client.
	countedMaybe
)

// wantClosedCount waits until the master's client-closed count, before
// when the case began, has grown as want says, and that it then says no
// more than that.
func wantClosedCount(t *testing.T, in *instance, want closedCount, before float64) {
	t.Helper()
	closed := func() float64 { return scrapeMetrics(t, in)["supervisor_client_closed_requests_total"] - before }
	if want == countedOnce {
		polltest.Until(t, 10*time.Second, 50*time.Millisecond, "the master to count the client-closed request", func() bool {
			return closed() >= 1
		})
	}
	limit := map[closedCount]float64{countedNever: 0, countedOnce: 1, countedMaybe: 1}[want]
	if n := closed(); n > limit {
		t.Errorf("the master counted %v client-closed requests for this case, want at most %v", n, limit)
	}
}

// wantCode sends the long run over gRPC under ctx and wants code back.
func wantCode(ctx context.Context, client pb.GRPCInferenceServiceClient, code codes.Code) error {
	if _, err := client.ModelInfer(ctx, slowRequest(10_000_000)); status.Code(err) != code {
		return fmt.Errorf("answered %v, want %s", err, code)
	}
	return nil
}

// wantRunStopped runs abandon, which sends a run of about ten seconds
// (max_run_time 20s) and gives up on it, and asserts that the model's one
// instance then serves a quick request within 5s of the send: the run
// was stopped once nobody waited. 5s leaves room for a loaded -race run
// and is half the unstopped run.
func wantRunStopped(t *testing.T, in *instance, how string, abandon func() error) {
	t.Helper()
	start := time.Now()
	if err := abandon(); err != nil {
		t.Fatalf("a long run %s: %v (after %s)", how, err, time.Since(start))
	}
	gaveUp := time.Since(start)
	if code, b, _ := in.post("/v2/models/slow/infer", slowBody(3), nil); code != http.StatusOK {
		t.Fatalf("a quick run after the abandoned one = %d %s, want 200", code, b)
	}
	served := time.Since(start)
	t.Logf("the client gave up after %s; the next request was served %s after the abandoned one was sent", gaveUp, served)
	if served > 5*time.Second {
		t.Fatalf("the next request waited %s: the abandoned run was not stopped (it takes about 10s; max_run_time is 20s)", served)
	}
}

// wantNoRestartNoRunTimeout asserts that infer-0 is still pid, ready, and
// that no run of the slow model counted as a run timeout: abandoned runs
// are stopped without either.
func wantNoRestartNoRunTimeout(t *testing.T, in *instance, pid int) {
	t.Helper()
	if w := workerNamed(t, in, "infer-0"); w.PID != pid || w.State != "ready" {
		t.Fatalf("infer-0: pid %d state %s, want pid %d still ready (no restart)", w.PID, w.State, pid)
	}
	if got := scrapeMetrics(t, in)[`supervisor_run_timeouts_total{model="slow"}`]; got != 0 {
		t.Errorf("supervisor_run_timeouts_total{model=\"slow\"} = %v, want 0: an abandoned run is no run timeout", got)
	}
}

// slowRequest is slowBody as a gRPC ModelInfer request.
func slowRequest(n int64) *pb.ModelInferRequest {
	return &pb.ModelInferRequest{ModelName: "slow", Inputs: []*pb.ModelInferRequest_InferInputTensor{{
		Name: "n", Datatype: "INT64", Shape: []int64{}, Contents: &pb.InferTensorContents{Int64Contents: []int64{n}}}}}
}
