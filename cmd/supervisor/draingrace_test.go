package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// lameDuckInstance starts a one-model instance with drain_grace and
// returns it with an mlp infer body.
func lameDuckInstance(t *testing.T, grace string) (*instance, []byte) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, extra: "drain_grace: " + grace + "\n"})
	return in, inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
}

// waitLameDuck waits until /v2/health/ready answers 503 after a stop.
func waitLameDuck(t *testing.T, in *instance) {
	t.Helper()
	pollUntil(t, 10*time.Second, "/v2/health/ready answers 503 after the stop", func() bool {
		code, _, _ := in.get("/v2/health/ready")
		return code == http.StatusServiceUnavailable
	})
}

// TestDrainGraceKeepsServingWhileNotReady: on SIGTERM with drain_grace,
// ready answers 503 (a V2 error, gRPC ServerReady false) while live and
// inference still answer 200; the master exits 0 once the grace and the
// drain are over, and not before the grace.
func TestDrainGraceKeepsServingWhileNotReady(t *testing.T) {
	const grace = 6 * time.Second
	in, body := lameDuckInstance(t, grace.String())
	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
		t.Fatalf("infer before the stop: %d %s", code, resp)
	}
	stopAt := time.Now()
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	waitLameDuck(t, in)
	code, resp, _ := in.get("/v2/health/ready")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(resp), `"error":"not ready: stopping (drain_grace)`) {
		t.Errorf("ready during the grace: %d %s, want 503 with a V2 error naming drain_grace", code, resp)
	}
	if r, err := c.ServerReady(ctx, &pb.ServerReadyRequest{}); err != nil || r.Ready {
		t.Errorf("gRPC ServerReady during the grace = %v, %v; want ready=false", r, err)
	}
	if code, _, _ := in.get("/v2/health/live"); code != http.StatusOK {
		t.Errorf("live during the grace: %d, want 200", code)
	}
	if st := in.status(); st.Ready || st.Stopping != control.StoppingGrace {
		t.Errorf("status during the grace: ready=%v stopping=%q, want false %q", st.Ready, st.Stopping, control.StoppingGrace)
	}
	if out, err := in.cli("status"); err != nil || !strings.Contains(out, "stopping (drain_grace)") {
		t.Errorf("supervisor status during the grace (%v) does not say stopping (drain_grace):\n%s", err, out)
	}
	if ready := scrapeMetrics(t, in)["supervisor_ready"]; ready != 0 {
		t.Errorf("supervisor_ready during the grace = %v, want 0", ready)
	}
	for i := range 5 {
		if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
			t.Fatalf("infer %d during the grace: %d %s", i, code, resp)
		}
	}
	if since := time.Since(stopAt); since >= grace {
		t.Fatalf("the checks took %s, longer than the grace %s: nothing above ran inside it", since, grace)
	}
	in.waitExit(60 * time.Second)
	if took := time.Since(stopAt); took < grace {
		t.Errorf("the master exited %s after SIGTERM, before drain_grace %s was over", took, grace)
	}
}

// TestSecondSIGTERMSkipsDrainGrace: a second SIGTERM during a long grace
// ends it; the master drains and exits 0 at once.
func TestSecondSIGTERMSkipsDrainGrace(t *testing.T) {
	in, _ := lameDuckInstance(t, "10m")
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	waitLameDuck(t, in)
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	in.waitExit(60 * time.Second)
	if !strings.Contains(in.log.String(), "second stop signal: skipping the rest of drain_grace") {
		t.Errorf("the log does not say the second SIGTERM ended the grace")
	}
}

// TestSecondStopSkipsDrainGrace: during the grace a reload is refused (stop
// wins), and a second `supervisor stop` ends the grace; both stops return
// once the master has exited 0.
func TestSecondStopSkipsDrainGrace(t *testing.T) {
	in, _ := lameDuckInstance(t, "10m")
	stops := make(chan cliResult, 2)
	stop := func() { out, err := in.cli("stop"); stops <- cliResult{out, err} }
	go stop()
	waitLameDuck(t, in)
	if out, err := in.cli("reload"); err == nil {
		t.Errorf("a reload during the grace succeeded, want it refused (the master is stopping): %s", out)
	}
	go stop()
	in.waitExit(60 * time.Second)
	for i := range 2 {
		select {
		case res := <-stops:
			if res.err != nil {
				t.Errorf("supervisor stop %d: %v\n%s", i, res.err, res.out)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("supervisor stop %d has not returned 30s after the master exited", i)
		}
	}
}

// TestDrainGraceTellsSystemdStopping: STOPPING=1 comes at the start of the
// grace, the watchdog is still fed during it, and nothing says READY=1
// after it, not even a reload refused during the grace.
func TestDrainGraceTellsSystemdStopping(t *testing.T) {
	n := listenNotify(t)
	env := []string{n.env(), "WATCHDOG_USEC=200000"}
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, env: env, extra: "drain_grace: 10m\n"})
	n.expect(t, "READY=1")
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	n.expect(t, "STOPPING=1", "STATUS=lame duck: /v2/health/ready answers 503 for drain_grace, then draining")
	n.expect(t, "WATCHDOG=1")
	waitLameDuck(t, in)
	if out, err := in.cli("reload"); err == nil {
		t.Errorf("a reload during the grace succeeded: %s", out)
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	in.waitExit(60 * time.Second)
	for {
		select {
		case msg := <-n.msgs:
			if containsLines(msg, []string{"READY=1"}) {
				t.Errorf("READY=1 after STOPPING=1: %q", msg)
			}
		default:
			return
		}
	}
}
