package main

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

// poisonedInstance serves the ModByXMinus3 model "poisoned" with
// poison_threshold 2 and workers lines (YAML under workers:) added.
func poisonedInstance(t *testing.T, workers string) *instance {
	t.Helper()
	return startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		models: map[string]string{"poisoned": writeModel(t, t.TempDir(), "poisoned", onnxmodel.ModByXMinus3())},
		extra:  "limits:\n  poison_threshold: 2\n  poison_ttl: 60s\nworkers:\n" + workers})
}

const poisonedPath = "/v2/models/poisoned/infer"

// wantPoisoned posts body (with hdr) and wants status code.
func wantPoisoned(t *testing.T, in *instance, what string, body []byte, hdr map[string]string, code int) {
	t.Helper()
	if got, b, _ := in.post(poisonedPath, body, hdr); got != code {
		t.Fatalf("%s = %d %s, want %d", what, got, b, code)
	}
}

// TestPoisonKeyIgnoresTheEncoding: the poison body crashes infer-0 once
// as plain JSON and once gzip'd with other JSON whitespace; sent a third
// time as binary tensor data it is refused 422, while an innocent body
// is served throughout.
func TestPoisonKeyIgnoresTheEncoding(t *testing.T) {
	in := poisonedInstance(t, "  restart_backoff: 50ms\n")
	good := modBody("5,6,7,8")
	spaced := []byte("{ \"inputs\": [ { \"name\": \"x\", \"datatype\": \"INT64\",\n  \"shape\": [1, 4], \"data\": [1, 2, 3, 4] } ] }\n")
	for i, send := range []struct {
		body []byte
		hdr  map[string]string
	}{{modBody("1,2,3,4"), nil}, {httpcoding.Compress(httpcoding.Gzip, spaced), map[string]string{"Content-Encoding": "gzip"}}} {
		pid := workerNamed(t, in, "infer-0").PID
		wantPoisoned(t, in, fmt.Sprintf("poison send %d", i+1), send.body, send.hdr, http.StatusBadGateway)
		waitInferRestarted(t, in, pid)
		wantPoisoned(t, in, "the innocent body", good, nil, http.StatusOK)
	}
	header := `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"parameters":{"binary_data_size":32}}]}`
	bin := []byte(header)
	for _, x := range []uint64{1, 2, 3, 4} {
		bin = binary.LittleEndian.AppendUint64(bin, x)
	}
	wantPoisoned(t, in, "the poison body as binary tensors", bin,
		map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header)), "Content-Type": "application/octet-stream"},
		http.StatusUnprocessableEntity)
	wantPoisoned(t, in, "the innocent body", good, nil, http.StatusOK)
}

// TestPoisonCountsPrepCrashes: requests in flight on prep-0 when it
// crashes (SIGABRT: what a decoder bug's abort does; the Go runtime
// exits 2) get a strike each. The poison body, in flight at both
// crashes, is refused 422 afterwards; the innocent ones, each in flight
// at one crash, are served, as is one retried right after its crash.
func TestPoisonCountsPrepCrashes(t *testing.T) {
	in := poisonedInstance(t, "  heartbeat_timeout: 60s\n  restart_backoff: 50ms\n")
	bad, first, second := modBody("9,9,9,1"), modBody("5,6,7,8"), modBody("4,5,6,7")
	wantPoisoned(t, in, "an innocent body", first, nil, http.StatusOK)
	crashPrepUnder(t, in, bad, first)
	wantPoisoned(t, in, "the innocent body retried after one crash", first, nil, http.StatusOK)
	crashPrepUnder(t, in, bad, second)
	wantPoisoned(t, in, "the body in flight at both prep crashes", bad, nil, http.StatusUnprocessableEntity)
	wantPoisoned(t, in, "the innocent body of the first crash", first, nil, http.StatusOK)
	wantPoisoned(t, in, "the innocent body of the second crash", second, nil, http.StatusOK)
}

// crashPrepUnder holds bodies in flight on prep-0 (infer-0 is stopped,
// so none is answered), crashes prep-0 and wants each answered 502; then
// lets infer-0 go on and waits for prep-0 back.
func crashPrepUnder(t *testing.T, in *instance, bodies ...[]byte) {
	t.Helper()
	infer, prep := workerNamed(t, in, "infer-0"), workerNamed(t, in, "prep-0")
	defer syscall.Kill(infer.PID, syscall.SIGCONT)
	stopProcess(t, infer.PID)
	codes := make(chan int, len(bodies))
	for _, body := range bodies {
		go func() {
			code, _, _ := in.post(poisonedPath, body, nil)
			codes <- code
		}()
	}
	pollUntil(t, 30*time.Second, fmt.Sprintf("%d requests in flight on prep-0", len(bodies)), func() bool {
		return metricValue(t, in, `supervisor_lb_inflight{`) >= float64(len(bodies))
	})
	sendSignal(t, prep.PID, syscall.SIGABRT)
	for range bodies {
		if code := <-codes; code != http.StatusBadGateway {
			t.Fatalf("a request in flight on the crashed prep-0 = %d, want 502", code)
		}
	}
	sendSignal(t, infer.PID, syscall.SIGCONT)
	pollUntil(t, 30*time.Second, fmt.Sprintf("prep-0 to restart (was pid %d)", prep.PID), func() bool {
		w := workerNamed(t, in, "prep-0")
		return w.PID != 0 && w.PID != prep.PID && w.State == "ready"
	})
}

// TestPoisonIgnoresHangKills: a request in flight on infer-0 when the
// hang detection kills it (heartbeat_timeout; the test stops infer-0
// with SIGSTOP) gets no strike: after two such kills the same body is
// served. A wedged worker's requests are innocent (a run that never
// returns is max_run_time's strike), and counting them would quarantine
// a load test's one body after two hangs (TestChaos). Nothing of it ran
// (the stopped worker was at work on nothing), so the master sends it
// again: 503 while no infer worker is back, 200 if one is.
func TestPoisonIgnoresHangKills(t *testing.T) {
	in := poisonedInstance(t, "  heartbeat_timeout: 1s\n  restart_backoff: 50ms\n")
	body := modBody("7,7,7,7")
	for i := 1; i <= 2; i++ {
		pid := workerNamed(t, in, "infer-0").PID
		stopProcess(t, pid)
		if code, b, _ := in.post(poisonedPath, body, nil); code != http.StatusServiceUnavailable && code != http.StatusOK {
			t.Fatalf("send %d to the stopped infer-0 = %d %s, want 503 or 200: sent again, not 502", i, code, b)
		}
		waitInferRestarted(t, in, pid)
	}
	wantPoisoned(t, in, "the body in flight at two hang kills", body, nil, http.StatusOK)
}
