package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/worker"
)

// modBody is a V2 request of the ModByXMinus3 model with x = xs.
func modBody(xs string) []byte {
	return []byte(`{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"data":[` + xs + `]}]}`)
}

// TestPoisonRequestIsQuarantined sends a body that crashes its infer
// worker (an element 3 in x makes ONNX Runtime divide by zero): the first
// two sends crash it and get the defined 502, the third is refused 422 at
// once with the worker's pid unchanged, other bodies are served
// throughout, and the quarantine ends after limits.poison_ttl.
func TestPoisonRequestIsQuarantined(t *testing.T) {
	dir := t.TempDir()
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		models: map[string]string{"poisoned": writeModel(t, dir, "poisoned", onnxmodel.ModByXMinus3())},
		extra:  "limits:\n  poison_threshold: 2\n  poison_ttl: 4s\n"})
	const path = "/v2/models/poisoned/infer"
	bad, good, other := modBody("1,2,3,4"), modBody("5,6,7,8"), modBody("4,5,6,7")
	wantServed := func(body []byte) {
		t.Helper()
		if code, b, _ := in.post(path, body, nil); code != http.StatusOK {
			t.Fatalf("innocent body %s = %d %s, want 200", body, code, b)
		}
	}
	wantServed(good)
	for i := 1; i <= 2; i++ {
		pid := workerNamed(t, in, "infer-0").PID
		code, b, hdr := in.post(path, bad, nil)
		if code != http.StatusBadGateway || !strings.Contains(string(b), `serving model \"poisoned\" exited during this request`) {
			t.Fatalf("poison send %d = %d %s, want 502 naming the model", i, code, b)
		}
		if hdr.Get(worker.InferExitedHeader) != "" {
			t.Errorf("the client sees the internal header %s", worker.InferExitedHeader)
		}
		waitInferRestarted(t, in, pid)
		wantServed(good)
	}
	pid := workerNamed(t, in, "infer-0").PID
	start := time.Now()
	code, b, _ := in.post(path, bad, nil)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `model \"poisoned\"`) || !strings.Contains(string(b), "poison_ttl") {
		t.Fatalf("third poison send = %d %s, want 422 naming the model and the ttl", code, b)
	}
	took := time.Since(start)
	if w := workerNamed(t, in, "infer-0"); w.PID != pid || w.State != "ready" {
		t.Fatalf("infer-0 after the refused send: pid %d state %s, want pid %d still ready", w.PID, w.State, pid)
	}
	wantServed(other) // a different body is never refused
	m := scrapeMetrics(t, in)
	if m[`supervisor_poison_quarantined_total{model="poisoned"}`] != 1 || m[`supervisor_poison_quarantine_size{model="poisoned"}`] != 1 {
		t.Errorf("poison metrics total=%v now=%v, want 1 and 1", m[`supervisor_poison_quarantined_total{model="poisoned"}`],
			m[`supervisor_poison_quarantine_size{model="poisoned"}`])
	}
	if out, err := in.cli("status"); err != nil || !strings.Contains(out, "POISON poisoned: 1 request bodies refused 422") {
		t.Errorf("supervisor status (%v) does not show the quarantine:\n%s", err, out)
	}
	if !strings.Contains(in.log.String(), "request quarantined") {
		t.Error("the log does not record the quarantine")
	}
	pollUntil(t, 10*time.Second, "the quarantine to end after poison_ttl", func() bool {
		return scrapeMetrics(t, in)[`supervisor_poison_quarantine_size{model="poisoned"}`] == 0
	})
	if code, b, _ := in.post(path, bad, nil); code != http.StatusBadGateway {
		t.Fatalf("poison send after poison_ttl = %d %s, want 502: it reaches the worker again", code, b)
	}
	t.Logf("the quarantined send was refused in %s", took)
}

// waitInferRestarted waits until infer-0 serves again in a process other
// than pid.
func waitInferRestarted(t *testing.T, in *instance, pid int) {
	t.Helper()
	pollUntil(t, 30*time.Second, fmt.Sprintf("infer-0 to restart (was pid %d)", pid), func() bool {
		w := workerNamed(t, in, "infer-0")
		return w.PID != 0 && w.PID != pid && w.State == "ready"
	})
}

// TestPoisonCountsBatchedInnocentsOnce: an innocent request batched with
// a poison one fails in the same crash (502), but it is counted once, so
// it is served when retried, while the poison body, in a second crash
// (alone: it is a suspect), is quarantined.
func TestPoisonCountsBatchedInnocentsOnce(t *testing.T) {
	dir := t.TempDir()
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"},
		models:   map[string]string{"poisoned": writeModel(t, dir, "poisoned", onnxmodel.ModByXMinus3())},
		batching: map[string]string{"poisoned": "{max_batch_size: 8, max_queue_delay: 2s, preferred_batch_sizes: [2]}"}})
	const path = "/v2/models/poisoned/infer"
	bad, innocent := modBody("1,2,3,4"), modBody("5,6,7,8")
	crashBatch(t, in, path, bad, innocent)
	if code, b, _ := in.post(path, innocent, nil); code != http.StatusOK {
		t.Fatalf("the innocent request retried = %d %s, want 200", code, b)
	}
	crashBatch(t, in, path, bad) // a suspect now: it runs alone
	if code, b, _ := in.post(path, bad, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("the poison body after two crashes = %d %s, want 422", code, b)
	}
	if code, b, _ := in.post(path, innocent, nil); code != http.StatusOK {
		t.Fatalf("the innocent body (in one crash) = %d %s, want 200", code, b)
	}
}

// crashBatch sends bodies at once, so that they form one batch (the
// model's preferred batch size is their number), and wants each answered
// 502 by the crash of infer-0, then infer-0 back.
func crashBatch(t *testing.T, in *instance, path string, bodies ...[]byte) {
	t.Helper()
	pid := workerNamed(t, in, "infer-0").PID
	for _, code := range postAll(in, path, bodies) {
		if code != http.StatusBadGateway {
			t.Fatalf("a request of the crashed batch = %d, want 502 (all %d in one batch)", code, len(bodies))
		}
	}
	waitInferRestarted(t, in, pid)
}

// postAll posts bodies at once (so that they can form one batch) and
// returns their status codes, in the order of bodies.
func postAll(in *instance, path string, bodies [][]byte) []int {
	out := make([]int, len(bodies))
	var wg sync.WaitGroup
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], _, _ = in.post(path, body, nil)
		}()
	}
	wg.Wait()
	return out
}
