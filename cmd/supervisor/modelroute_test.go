package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// TestModelServedWhereItLoaded: two infer workers; the file of model
// "flaky" is broken on disk after both loaded it, then infer-1 is killed.
// Its replacement cannot load flaky (unavailable there, with the reason),
// while infer-0 still serves it from memory. Every request for flaky
// reaches infer-0 and succeeds; the prep worker does not send one to the
// worker without it. Once infer-0 is replaced too, no worker serves flaky
// and it answers 503 with the reason.
func TestModelServedWhereItLoaded(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(modelsDir, "mlp.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	flaky := writeBytes(t, filepath.Join(t.TempDir(), "flaky.onnx"), good)
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 2, modelNames: []string{"mlp"},
		models: map[string]string{"flaky": flaky}})

	writeBytes(t, flaky, []byte("this is not an ONNX model any more"))
	w := replaceWorker(t, in, "infer-1")
	if w.UnavailableModels["flaky"] == "" {
		t.Fatalf("infer-1's replacement serves flaky from a broken file (unavailable models %v)", w.UnavailableModels)
	}
	for i := range 20 {
		if code, body, _ := in.post("/v2/models/flaky/infer", mlpBody(), nil); code != http.StatusOK {
			t.Fatalf("flaky request %d = %d %s, want 200 from infer-0, which still serves it", i, code, body)
		}
	}
	if code, body, _ := in.get("/v2/models/flaky/ready"); code != http.StatusOK {
		t.Fatalf("flaky ready = %d %s, want 200 while infer-0 serves it", code, body)
	}

	replaceWorker(t, in, "infer-0")
	wantUnavailable(t, in, "flaky", "could not")
	if code, body, _ := in.post("/v2/models/mlp/infer", mlpBody(), nil); code != http.StatusOK {
		t.Fatalf("mlp infer = %d %s, want 200", code, body)
	}
}

// replaceWorker kills the named infer worker and waits until its
// replacement serves and the prep workers have been given its socket.
func replaceWorker(t *testing.T, in *instance, name string) (w control.WorkerStatus) {
	t.Helper()
	old := workerNamed(t, in, name)
	logged := len(in.log.String())
	if err := syscall.Kill(old.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 90*time.Second, name+" replaced and serving", func() bool {
		w = workerNamed(t, in, name)
		return w.PID != old.PID && w.PID != 0 && w.State == "ready"
	})
	pollUntil(t, 30*time.Second, "the prep worker told of "+w.Socket, func() bool {
		for _, line := range strings.Split(in.log.String()[logged:], "\n") {
			if strings.Contains(line, "infer workers updated") && strings.Contains(line, w.Socket) {
				return true
			}
		}
		return false
	})
	return w
}
