package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

// TestReloadedWeightsEndTheQuarantine: a body quarantined on a model's
// weights (a run of 2000 sine nodes stopped at max_run_time, a strike
// with limits.poison_threshold 1) is refused 422; once the model's file
// is replaced with other weights (one sine node: the same run is quick)
// and the config reloaded, the same body reaches the model and is
// answered, an hour before its poison_ttl, because the quarantine key
// carries the model file's content identity.
func TestReloadedWeightsEndTheQuarantine(t *testing.T) {
	dir := t.TempDir()
	slow := writeModel(t, dir, "slow", onnxmodel.SlowSin(2000))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		modelItems: fmt.Sprintf("  - {name: slow, path: %s, batching: {max_batch_size: 0}, max_run_time: 300ms}\n", slow),
		extra:      "limits:\n  poison_threshold: 1\n  poison_ttl: 1h\n"})
	const path = "/v2/models/slow/infer"
	long := slowBody(1_000_000)
	if code, b, _ := in.post(path, long, nil); code != http.StatusInternalServerError {
		t.Fatalf("long run = %d %s, want 500: stopped at max_run_time", code, b)
	}
	if code, b, _ := in.post(path, long, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("long run again = %d %s, want 422: quarantined after one strike", code, b)
	}
	quick, err := onnxmodel.SlowSin(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	installModel(t, slow, quick, time.Now())
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	if code, b, _ := in.post(path, long, nil); code != http.StatusOK {
		t.Fatalf("the body after a reload to other weights = %d %s, want 200: no longer quarantined", code, b)
	}
}
