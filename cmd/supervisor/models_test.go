package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// writeModel writes m into dir as name.onnx and returns its path.
func writeModel(t *testing.T, dir, name string, m *onnxmodel.Model) string {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return writeBytes(t, filepath.Join(dir, name+".onnx"), b)
}

func writeBytes(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantUnavailable checks that a model's routes answer 503 with a V2 error
// that names the model and contains reason.
func wantUnavailable(t *testing.T, in *instance, model, reason string) {
	t.Helper()
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v2/models/" + model + "/ready"},
		{http.MethodGet, "/v2/models/" + model},
		{http.MethodPost, "/v2/models/" + model + "/infer"},
	} {
		var req []byte // the front refuses a body on a GET route
		if r.method == http.MethodPost {
			req = []byte(`{"inputs":[]}`)
		}
		code, body, _ := in.do(r.method, r.path, req, nil)
		var e struct{ Error string }
		if code != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil ||
			!strings.Contains(e.Error, strconv.Quote(model)+" is unavailable") || !strings.Contains(e.Error, reason) {
			t.Errorf("%s %s = %d %s, want 503 with a V2 error saying %q is unavailable: ...%s...", r.method, r.path, code, body, model, reason)
		}
	}
}

func modelState(t *testing.T, st control.Status, name string) control.ModelState {
	t.Helper()
	for _, m := range st.Models {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no model %q in status %+v", name, st.Models)
	return control.ModelState{}
}

// TestBadModelsAreIsolated serves, next to the generated models, one that
// kills its process with SIGFPE during the zero warm-up (integer Mod by a
// zero computed in the graph), one that is not ONNX at all, one that
// divides by an input (whose warm-up must not divide by zero) and one with
// scalar inputs and outputs. The server becomes ready, the good models
// serve, the bad ones answer 503 with their reason everywhere it shows.
// A valid model whose zero warm-up ONNX Runtime refuses (reshape: zeros
// are not a shape) serves, with a warning in status and the log.
func TestBadModelsAreIsolated(t *testing.T) {
	dir := t.TempDir()
	crash := writeModel(t, dir, "crash", onnxmodel.ModByZero())
	fixed := filepath.Join(modelsDir, "fixed.onnx")
	good := writeBytes(t, filepath.Join(dir, "good.json"), []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[2,3],"data":[1,2,3,4,5,6]}]}`))
	bad := writeBytes(t, filepath.Join(dir, "bad.json"), []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[3,2],"data":[1,2,3,4,5,6]}]}`))
	in := startInstance(t, options{prepWorkers: 1, models: map[string]string{
		"crash":   crash,
		"garbage": writeBytes(t, filepath.Join(dir, "garbage.onnx"), []byte("this is not an ONNX model")),
		"modin":   writeModel(t, dir, "modin", onnxmodel.ModByInput()),
		"scalar":  writeModel(t, dir, "scalar", onnxmodel.Scalar()),
		"reshape": writeModel(t, dir, "reshape", onnxmodel.ReshapeByInput()),
	}, modelItems: "  - {name: nowarm, path: " + crash + ", warmup: none}\n" +
		"  - {name: warmfile, path: " + fixed + ", warmup: " + good + "}\n" +
		"  - {name: badwarm, path: " + fixed + ", warmup: " + bad + "}\n" +
		// Prep checks image settings against the model's metadata at
		// boot; an unavailable model has none and must not fail the boot.
		"  - {name: badimage, path: " + filepath.Join(dir, "garbage.onnx") + ", preprocess: {kind: image}}\n"})

	code, body, _ := in.post("/v2/models/mlp/infer", mlpBody(), nil)
	if code != http.StatusOK {
		t.Fatalf("mlp infer = %d %s, want 200", code, body)
	}
	wantUnavailable(t, in, "crash", "died")
	wantUnavailable(t, in, "garbage", "could not")
	wantUnavailable(t, in, "badwarm", "warmup")
	wantUnavailable(t, in, "badimage", "could not")
	// warmup: none keeps the crashing model from running at boot.
	for _, m := range []string{"nowarm", "warmfile"} {
		if code, body, _ := in.get("/v2/models/" + m + "/ready"); code != http.StatusOK {
			t.Errorf("%s ready = %d %s, want 200", m, code, body)
		}
	}

	code, body, _ = in.post("/v2/models/modin/infer",
		[]byte(`{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"data":[7,7,7,7]},{"name":"d","datatype":"INT64","shape":[1,4],"data":[2,3,4,5]}]}`), nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"data":[1,1,3,2]`) {
		t.Errorf("modin infer = %d %s, want 200 with 7 mod [2,3,4,5] = [1,1,3,2]", code, body)
	}

	// A zero divisor from a client is refused before ONNX Runtime
	// divides by it and takes the worker down with every model.
	code, body, _ = in.post("/v2/models/modin/infer",
		[]byte(`{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"data":[7,7,7,7]},{"name":"d","datatype":"INT64","shape":[1,4],"data":[2,0,4,5]}]}`), nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "divides by this input") {
		t.Errorf("modin infer with a zero divisor = %d %s, want 400 naming the input", code, body)
	}

	code, body, _ = in.post("/v2/models/reshape/infer",
		[]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[4],"data":[1,2,3,4]},{"name":"shape","datatype":"INT64","shape":[2],"data":[2,2]}]}`), nil)
	if code != http.StatusOK || !strings.Contains(string(body), `{"name":"y","datatype":"FP32","shape":[2,2],"data":[1,2,3,4]}`) {
		t.Errorf("reshape (its zero warm-up refused) infer = %d %s, want 200 with y [2,2] = [1,2,3,4]", code, body)
	}

	st := in.status()
	for name, want := range map[string]bool{"mlp": true, "modin": true, "scalar": true, "reshape": true, "crash": false, "garbage": false} {
		if ms := modelState(t, st, name); ms.Ready != want || (!want && ms.Reason == "") {
			t.Errorf("status model %+v, want ready=%v (with a reason when not)", ms, want)
		}
	}
	if ms := modelState(t, st, "reshape"); !strings.Contains(ms.Warning, "warm-up at batch size 1 failed") || !strings.Contains(ms.Warning, "serves anyway") {
		t.Errorf("status of reshape: warning %q, want the failed warm-up and that it serves", ms.Warning)
	}
	if ms := modelState(t, st, "mlp"); ms.Warning != "" {
		t.Errorf("status of mlp warns %q, want nothing", ms.Warning)
	}
	if !logHasLine(in, `"model":"reshape"`, "its warm-up failed: it serves") {
		t.Error("no infer worker logged that reshape's warm-up failed and that it serves")
	}
	if w := workerNamed(t, in, "infer-0"); w.UnavailableModels["crash"] == "" || w.UnavailableModels["garbage"] == "" || w.Restarts != 0 {
		t.Errorf("infer-0 unavailable models %v, restarts %d: want crash and garbage, and no restart (the boot retry is not one)",
			w.UnavailableModels, w.Restarts)
	}
	out, err := in.cli("status")
	if err != nil || !strings.Contains(out, "MODEL UNAVAILABLE crash:") || !strings.Contains(out, "MODEL WARNING reshape (it serves):") {
		t.Errorf("supervisor status (%v) does not show the crashed model and reshape's warm-up warning:\n%s", err, out)
	}
	metrics := scrapeMetrics(t, in)
	if metrics[`supervisor_model_ready{model="crash"}`] != 0 || metrics[`supervisor_model_ready{model="mlp"}`] != 1 {
		t.Errorf("supervisor_model_ready crash=%v mlp=%v, want 0 and 1",
			metrics[`supervisor_model_ready{model="crash"}`], metrics[`supervisor_model_ready{model="mlp"}`])
	}
	if log := in.log.String(); !strings.Contains(log, "worker died while warming up a model") || !strings.Contains(log, `"model":"garbage"`) {
		t.Errorf("the log does not name the crash and the unloadable model")
	}
	t.Run("scalars", func(t *testing.T) { testScalars(t, in) })
}

// testScalars sends rank-0 tensors (shape []) as JSON and as binary data.
func testScalars(t *testing.T, in *instance) {
	code, body, _ := in.get("/v2/models/scalar")
	if code != http.StatusOK || !strings.Contains(string(body), `{"name":"x","datatype":"FP32","shape":[]}`) {
		t.Errorf("scalar metadata = %d %s, want input x FP32 shape []", code, body)
	}
	code, body, _ = in.post("/v2/models/scalar/infer",
		[]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[],"data":[3.5]},{"name":"n","datatype":"INT64","shape":[],"data":[41]}]}`), nil)
	if code != http.StatusOK || !strings.Contains(string(body), `{"name":"y","datatype":"FP32","shape":[],"data":[8]}`) ||
		!strings.Contains(string(body), `{"name":"m","datatype":"INT64","shape":[],"data":[42]}`) {
		t.Errorf("scalar JSON infer = %d %s, want y=[8] and m=[42] with shape []", code, body)
	}
	header := `{"inputs":[{"name":"x","datatype":"FP32","shape":[],"parameters":{"binary_data_size":4}},` +
		`{"name":"n","datatype":"INT64","shape":[],"parameters":{"binary_data_size":8}}],` +
		`"outputs":[{"name":"y","parameters":{"binary_data":true}}]}`
	bin := binary.LittleEndian.AppendUint32([]byte(header), math.Float32bits(-1))
	bin = binary.LittleEndian.AppendUint64(bin, 1)
	code, body, hdr := in.post("/v2/models/scalar/infer", bin,
		map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))})
	n, _ := strconv.Atoi(hdr.Get("Inference-Header-Content-Length"))
	if code != http.StatusOK || n <= 0 || n+4 != len(body) ||
		math.Float32frombits(binary.LittleEndian.Uint32(body[n:])) != -1 {
		t.Errorf("scalar binary infer = %d (header %d) %q, want y = 2*-1+1 = -1 as 4 binary bytes", code, n, body)
	}
}

// TestReloadBringsBackAFixedModel: a model that fails to load leaves the
// server ready, unless strict_readiness; the reload outcome names it; once
// its file is replaced in place, a reload serves it.
func TestReloadBringsBackAFixedModel(t *testing.T) {
	dir := t.TempDir()
	fixme := writeBytes(t, filepath.Join(dir, "fixme.onnx"), []byte("truncated"))
	in := startInstance(t, options{prepWorkers: 1, models: map[string]string{"fixme": fixme}})
	wantUnavailable(t, in, "fixme", "could not")
	if out, err := in.cli("check"); err == nil || !strings.Contains(out, `models[4].path: model "fixme" does not load`) {
		t.Errorf("check (%v) does not report the model that does not load:\n%s", err, out)
	}

	f, err := os.OpenFile(in.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("strict_readiness: true\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := in.cli("reload")
	if err != nil || !strings.Contains(out, "model unavailable (the others serve): fixme: ") {
		t.Errorf("reload (%v) does not name the unavailable model:\n%s", err, out)
	}
	if code, body, _ := in.get("/v2/health/ready"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "strict_readiness") {
		t.Errorf("ready with strict_readiness and a bad model = %d %s, want 503 naming strict_readiness", code, body)
	}

	b, err := onnxmodel.MLP(onnxmodel.DefaultSeed).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	writeBytes(t, fixme, b)
	if out, err := in.cli("reload"); err != nil || strings.Contains(out, "unavailable") {
		t.Errorf("reload after the fix (%v):\n%s", err, out)
	}
	if code, body, _ := in.get("/v2/health/ready"); code != http.StatusOK {
		t.Errorf("ready after the fix = %d %s, want 200", code, body)
	}
	if code, body, _ := in.post("/v2/models/fixme/infer", mlpBody(), nil); code != http.StatusOK {
		t.Errorf("fixme infer after the fix = %d %s, want 200", code, body)
	}
	if out, err := in.cli("check"); err != nil {
		t.Errorf("check after the fix: %v\n%s", err, out)
	}
}

// mlpBody is one MLP row of zeros.
func mlpBody() []byte {
	return []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"data":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]}`)
}
