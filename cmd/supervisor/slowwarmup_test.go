package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

// slowRowsBody is one SlowRows(100, ...) row of zeros.
func slowRowsBody() []byte {
	return []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,100],"data":[` +
		strings.TrimSuffix(strings.Repeat("0,", 100), ",") + `]}]}`)
}

// TestSlowWarmupLeavesTheMasterUp (issue 28): a model whose warm-up does
// not fit boot_timeout is unavailable, saying so, and the master serves
// the others; it never exits for it. SlowRows(100, 1000) costs about
// 0.3ms a row here: "fits" (max_batch_size 512) warms 1023 rows, well
// within boot_timeout (every size from 1 to 512, 131k rows, was about
// 40s: at 49438f4 the master exited); "toolong" (65536) warms 131071 rows,
// about 40s, and is killed at the 8s boot_timeout, then skipped.
func TestSlowWarmupLeavesTheMasterUp(t *testing.T) {
	slow := writeModel(t, t.TempDir(), "slow", onnxmodel.SlowRows(100, 1000))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, bootTimeout: "8s",
		modelItems: "  - {name: fits, path: " + slow + ", batching: {max_batch_size: 512}}\n" +
			"  - {name: toolong, path: " + slow + ", batching: {max_batch_size: 65536}}\n"})
	wantServes(t, in, "mlp", mlpBody())
	wantServes(t, in, "fits", slowRowsBody())
	wantUnavailable(t, in, "toolong", "did not fit boot_timeout (8s)")
	if code, body, _ := in.get("/v2/health/ready"); code != http.StatusOK {
		t.Errorf("ready = %d %s, want 200 (strict_readiness is off)", code, body)
	}
	if out, err := in.cli("status"); err != nil || !strings.Contains(out, "MODEL UNAVAILABLE toolong: loading and warming it up did not fit boot_timeout") {
		t.Errorf("supervisor status (%v) does not say why toolong is unavailable:\n%s", err, out)
	}
	if w := workerNamed(t, in, "infer-0"); w.Restarts != 0 || w.State != "ready" {
		t.Errorf("infer-0 %+v: want ready with no restart counted (the boot retry is not one)", w)
	}
}
