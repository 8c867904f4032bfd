package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// TestCheckWarnsWhenAWarmupCannotFit (issue 28): `supervisor check`
// estimates each model's loading and warm-up and warns when it cannot fit
// boot_timeout; at 49438f4 it accepted the config in silence. The models
// are those of TestSlowWarmupLeavesTheMasterUp; check starts no master.
func TestCheckWarnsWhenAWarmupCannotFit(t *testing.T) {
	lib := needORT(t)
	dir := t.TempDir()
	slow := writeModel(t, dir, "slow", onnxmodel.SlowRows(100, 1000))
	cfg := writeBytes(t, filepath.Join(dir, "supervisor.yaml"), []byte("onnxruntime_library: "+lib+"\nboot_timeout: 8s\nmodels:\n"+
		"  - {name: mlp, path: "+filepath.Join(modelsDir, "mlp.onnx")+"}\n"+
		"  - {name: fits, path: "+slow+", batching: {max_batch_size: 512}}\n"+
		"  - {name: toolong, path: "+slow+", batching: {max_batch_size: 65536}}\n"+
		"placement:\n  overcommit: true\n"))
	b, err := exec.Command(binPath, "check", "-c", cfg).CombinedOutput()
	out := string(b)
	if err != nil || !strings.Contains(out, `# WARNING: model "toolong": loading and warming it up is estimated at`) ||
		!strings.Contains(out, "batch sizes 1, 2, 4, ..., 32768, 65536 (131071 rows)") ||
		!strings.Contains(out, "an estimate), over boot_timeout (8s)") || strings.Contains(out, `model "fits"`) {
		t.Errorf("check (%v) does not warn about toolong's warm-up alone:\n%s", err, out)
	}
}

// fixedBody is one request of fixed.onnx ([2,3]).
func fixedBody() []byte {
	return []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[2,3],"data":[1,2,3,4,5,6]}]}`)
}

// TestRepositoryLoadThatFailsChangesNothing (issue 28): a load whose
// override makes a serving model fail (a warm-up that does not fit
// boot_timeout; a batching the model's fixed shape refuses) answers 400
// naming it, and changes nothing: the previous version keeps answering,
// the override is not in force, and a later reload that touches the infer
// workers succeeds without trying it again. At 49438f4 the first load
// answered 500 "applied, but ... failed in part", and the override stayed.
func TestRepositoryLoadThatFailsChangesNothing(t *testing.T) {
	slow := writeModel(t, t.TempDir(), "slow", onnxmodel.SlowRows(100, 1000))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp", "fixed"}, bootTimeout: "5s",
		modelItems: "  - {name: slow, path: " + slow + ", batching: {max_batch_size: 64}}\n",
		extra:      "model_control: explicit\n"})
	huge := `{"parameters":{"config":"{\"max_batch_size\":65536}"}}`
	code, msg := repoCall(t, in, "/v2/repository/models/slow/load", huge)
	if code != http.StatusBadRequest || !strings.Contains(msg, `failed to load "slow": loading and warming it up did not fit boot_timeout (5s)`) {
		t.Errorf("load of slow with max_batch_size 65536 = %d %q, want 400 saying it did not fit boot_timeout", code, msg)
	}
	wantServes(t, in, "slow", slowRowsBody())
	batched := `{"parameters":{"config":"{\"max_batch_size\":8}"}}`
	code, msg = repoCall(t, in, "/v2/repository/models/fixed/load", batched)
	if code != http.StatusBadRequest || !strings.Contains(msg, `failed to load "fixed"`) || !strings.Contains(msg, "not dynamic") {
		t.Errorf("load of fixed with max_batch_size 8 = %d %q, want 400 with the batcher's refusal", code, msg)
	}
	wantServes(t, in, "fixed", fixedBody())
	idx := repoIndex(t, in, "")
	wantIndexState(t, idx, "slow", "READY", "")
	wantIndexState(t, idx, "fixed", "READY", "")
	wantAPIState(t, in, nil)

	// A reload whose file makes fixed fail exits 1 naming it; fixed keeps
	// serving, and the rest of the change (a new model) applies.
	base, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	types := filepath.Join(modelsDir, "types.onnx")
	withTypes := strings.Replace(string(base), "models:\n", "models:\n  - {name: types, path: "+types+"}\n", 1)
	writeConfig(t, in, strings.Replace(withTypes, "fixed.onnx}", "fixed.onnx, batching: {max_batch_size: 8}}", 1))
	if out, err := in.cli("reload"); err == nil || !strings.Contains(out, `failed to load "fixed"`) {
		t.Errorf("reload with fixed batched = %v, want exit 1 naming fixed:\n%s", err, out)
	}
	wantServes(t, in, "fixed", fixedBody())
	if code, body, _ := in.get("/v2/models/types/ready"); code != http.StatusOK {
		t.Errorf("types after the reload that failed for fixed: ready = %d %s, want 200", code, body)
	}

	// A reload that changes the infer worker (a model added: in place,
	// docs/models.md) does not try the failed overrides again (no second
	// boot_timeout kill).
	mlp := filepath.Join(modelsDir, "mlp.onnx")
	writeConfig(t, in, strings.Replace(withTypes, "models:\n", "models:\n  - {name: mlp2, path: "+mlp+"}\n", 1))
	if out, err := in.cli("reload"); err != nil || !strings.Contains(out, "models changed in place infer-0") {
		t.Errorf("reload after the failed loads = %v, want success changing infer-0's models in place:\n%s", err, out)
	}
	wantServes(t, in, "mlp2", mlpBody())
	if n := strings.Count(in.log.String(), "worker killed at boot_timeout"); n != 1 {
		t.Errorf("%d boot_timeout kills in the log, want 1 (the failed load's)", n)
	}
	for m, body := range map[string][]byte{"slow": slowRowsBody(), "fixed": fixedBody(), "mlp": mlpBody()} {
		wantServes(t, in, m, body)
	}
	if code, msg := repoCall(t, in, "/v2/repository/models/slow/load", `{"parameters":{"config":"{\"max_batch_size\":128}"}}`); code != http.StatusOK {
		t.Errorf("load of slow with max_batch_size 128 = %d %q, want 200", code, msg)
	}
	wantServes(t, in, "slow", slowRowsBody())
}
