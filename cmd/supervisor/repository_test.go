package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoClient waits longer than httpClient: a load returns once a new
// generation of workers serves.
var repoClient = &http.Client{Timeout: 150 * time.Second}

// repoCall POSTs to a repository route and returns the status and the
// V2 error ("" when none).
func repoCall(t *testing.T, in *instance, path, body string) (int, string) {
	t.Helper()
	resp, err := repoClient.Post(in.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Error string }
	if len(b) > 0 && json.Unmarshal(b, &e) != nil {
		t.Fatalf("POST %s: %d %q is not a V2 error", path, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Error
}

type indexEntry struct{ Name, Version, State, Reason string }

// repoIndex returns POST /v2/repository/index's answer to body.
func repoIndex(t *testing.T, in *instance, body string) map[string]indexEntry {
	t.Helper()
	code, b, _ := in.post("/v2/repository/index", []byte(body), nil)
	var entries []indexEntry
	if code != http.StatusOK || json.Unmarshal(b, &entries) != nil {
		t.Fatalf("index %s = %d %s, want 200 with a JSON array", body, code, b)
	}
	out := map[string]indexEntry{}
	for _, e := range entries {
		out[e.Name] = e
	}
	return out
}

func wantIndexState(t *testing.T, idx map[string]indexEntry, name, state, reason string) {
	t.Helper()
	e, ok := idx[name]
	if !ok || e.State != state || e.Version != "1" || !strings.Contains(e.Reason, reason) {
		t.Errorf("index entry of %q = %+v (present %t), want state %s, version 1, reason containing %q", name, e, ok, state, reason)
	}
}

func wantServes(t *testing.T, in *instance, model string, body []byte) {
	t.Helper()
	if code, b, _ := in.post("/v2/models/"+model+"/infer", body, nil); code != http.StatusOK {
		t.Errorf("infer on %s = %d %s, want 200", model, code, b)
	}
}

// TestRepositoryExplicit drives the repository API of a real supervisor
// with model_control explicit: the index, loads with and without a config
// override, a refused override, the load of a broken model (the others
// keep serving), unloads, and how a SIGHUP meets the API's state
// (docs/models.md: kept for models still in the file; a model new to the file
// follows startup_models).
func TestRepositoryExplicit(t *testing.T) {
	broken := writeBytes(t, filepath.Join(t.TempDir(), "broken.onnx"), []byte("this is not an ONNX model"))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp", "fixed"}, models: map[string]string{"broken": broken},
		extra: "model_control: explicit\nstartup_models: [mlp]\n"})
	if code, b, _ := in.get("/v2"); code != http.StatusOK || !strings.Contains(string(b), `"model_repository"`) {
		t.Errorf("GET /v2 = %d %s, want model_repository among the extensions", code, b)
	}
	idx := repoIndex(t, in, "")
	wantIndexState(t, idx, "mlp", "READY", "")
	wantIndexState(t, idx, "fixed", "UNAVAILABLE", "startup_models")
	wantIndexState(t, idx, "broken", "UNAVAILABLE", "startup_models")
	if idx := repoIndex(t, in, `{"ready":true}`); len(idx) != 1 || idx["mlp"].State != "READY" {
		t.Errorf(`index {"ready":true} = %+v, want mlp alone`, idx)
	}
	if code, _, _ := in.get("/v2/models/fixed/ready"); code != http.StatusBadRequest {
		t.Errorf("fixed, not loaded: ready = %d, want 400 (Triton's not ready)", code)
	}

	if code, msg := repoCall(t, in, "/v2/repository/models/fixed/load", ""); code != http.StatusOK {
		t.Fatalf("load fixed = %d %s, want 200", code, msg)
	}
	if code, _, _ := in.get("/v2/models/fixed/ready"); code != http.StatusOK {
		t.Errorf("fixed after its load: ready = %d, want 200", code)
	}
	wantIndexState(t, repoIndex(t, in, ""), "fixed", "READY", "")

	override := `{"parameters":{"config":"{\"name\":\"mlp\",\"max_batch_size\":8,\"dynamic_batching\":{\"max_queue_delay_microseconds\":2000}}"}}`
	if code, msg := repoCall(t, in, "/v2/repository/models/mlp/load", override); code != http.StatusOK {
		t.Fatalf("load mlp with an override = %d %s, want 200", code, msg)
	}
	if !logHasLine(in, `"model":"mlp"`, `"batching":{"max_batch_size":8,"max_queue_delay":2000000,`) {
		t.Error("no infer worker logged mlp loaded with the override's batching (max_batch_size 8, max_queue_delay 2ms)")
	}
	wantServes(t, in, "mlp", mlpBody())
	refused := `{"parameters":{"config":"{\"backend\":\"onnxruntime\",\"input\":[]}"}}`
	if code, msg := repoCall(t, in, "/v2/repository/models/mlp/load", refused); code != http.StatusBadRequest ||
		!strings.Contains(msg, "backend, input") {
		t.Errorf("load with an override of the model's inputs = %d %q, want 400 naming backend and input", code, msg)
	}
	if code, msg := repoCall(t, in, "/v2/repository/models/nosuch/load", ""); code != http.StatusNotFound || !strings.Contains(msg, "not in the config file") {
		t.Errorf("load of a model not in the file = %d %q, want 404", code, msg)
	}

	code, msg := repoCall(t, in, "/v2/repository/models/broken/load", "")
	if code != http.StatusBadRequest || !strings.Contains(msg, `failed to load "broken"`) {
		t.Errorf("load of a broken model = %d %q, want 400 with its error", code, msg)
	}
	wantServes(t, in, "mlp", mlpBody())
	wantIndexState(t, repoIndex(t, in, ""), "broken", "UNAVAILABLE", "")

	for _, m := range []string{"broken", "fixed"} {
		if code, msg := repoCall(t, in, "/v2/repository/models/"+m+"/unload", `{"parameters":{"unload_dependents":false}}`); code != http.StatusOK {
			t.Errorf("unload %s = %d %s, want 200", m, code, msg)
		}
	}
	if code, _, _ := in.get("/v2/models/fixed/ready"); code != http.StatusBadRequest {
		t.Errorf("fixed after its unload: ready = %d, want 400 (Triton's not ready)", code)
	}
	wantIndexState(t, repoIndex(t, in, ""), "fixed", "UNAVAILABLE", "unloaded")
	if code, msg := repoCall(t, in, "/v2/repository/models/mlp/unload", ""); code != http.StatusBadRequest || !strings.Contains(msg, "only model") {
		t.Errorf("unload of the last model = %d %q, want 400", code, msg)
	}
	wantAPIState(t, in, map[string]string{"mlp": "loaded with a config override", "fixed": "unloaded", "broken": "unloaded"})
	testRepositorySIGHUP(t, in)
}

// testRepositorySIGHUP adds a model to the file and reloads: the API's
// state of mlp and fixed stays, the new model is not in startup_models
// and waits for a load.
func testRepositorySIGHUP(t *testing.T, in *instance) {
	base, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	types := filepath.Join(modelsDir, "types.onnx")
	writeConfig(t, in, strings.Replace(string(base), "models:\n", "models:\n  - {name: types, path: "+types+"}\n", 1))
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	idx := repoIndex(t, in, "")
	wantIndexState(t, idx, "mlp", "READY", "")
	wantIndexState(t, idx, "fixed", "UNAVAILABLE", "unloaded")
	wantIndexState(t, idx, "types", "UNAVAILABLE", "startup_models")
	wantAPIState(t, in, map[string]string{"mlp": "loaded with a config override", "fixed": "unloaded", "broken": "unloaded",
		"types": "not in startup_models; load it with POST /v2/repository/models/{m}/load"})
	if out, err := in.cli("status"); err != nil || !strings.Contains(out, "repository API over the config file: broken (unloaded), fixed (unloaded)") {
		t.Errorf("supervisor status: %v, want a line listing the API's changes:\n%s", err, out)
	}
	// A load re-reads the file: an invalid one refuses it and changes nothing.
	writeConfig(t, in, "models: [\n")
	if code, msg := repoCall(t, in, "/v2/repository/models/fixed/load", ""); code != http.StatusBadRequest || !strings.Contains(msg, "nothing changed") {
		t.Errorf("load with an invalid config file = %d %q, want 400 saying nothing changed", code, msg)
	}
	wantIndexState(t, repoIndex(t, in, ""), "fixed", "UNAVAILABLE", "unloaded")
	wantServes(t, in, "mlp", mlpBody())
}

func wantAPIState(t *testing.T, in *instance, want map[string]string) {
	t.Helper()
	if got := in.status().RepositoryAPI; !reflect.DeepEqual(got, want) {
		t.Errorf("status repository_api = %v, want %v", got, want)
	}
}

// TestRepositoryModeNone: without model_control explicit, load and unload
// are refused (403) and change nothing; the index answers. The routes are
// under the API key and the method and body bounds like every route.
func TestRepositoryModeNone(t *testing.T) {
	key := "repo-test-key-0123456789"
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, extra: "auth:\n  api_keys: [" + key + "]\n"})
	auth := map[string]string{"Authorization": "Bearer " + key}
	for _, op := range []string{"load", "unload"} {
		code, b, _ := in.post("/v2/repository/models/mlp/"+op, nil, auth)
		if code != http.StatusForbidden || !bytes.Contains(b, []byte("model_control")) {
			t.Errorf("%s with model_control none = %d %s, want 403 naming model_control", op, code, b)
		}
	}
	code, b, _ := in.post("/v2/repository/index", nil, auth)
	if code != http.StatusOK || string(b) != `[{"name":"mlp","version":"1","state":"READY"}]` {
		t.Errorf("index = %d %s, want mlp READY", code, b)
	}
	for _, c := range []struct {
		method, path string
		body         []byte
		hdr          map[string]string
		want         int
	}{
		{http.MethodPost, "/v2/repository/index", nil, nil, http.StatusUnauthorized},
		{http.MethodGet, "/v2/repository/index", nil, auth, http.StatusMethodNotAllowed},
		{http.MethodPost, "/v2/repository/models/mlp/reload", nil, auth, http.StatusNotFound},
		{http.MethodPost, "/v2/repository/index", bytes.Repeat([]byte(" "), 65<<10), auth, http.StatusRequestEntityTooLarge},
		{http.MethodPost, "/v2/repository/index", []byte(`[1]`), auth, http.StatusBadRequest},
	} {
		if code, b, _ := in.do(c.method, c.path, c.body, c.hdr); code != c.want {
			t.Errorf("%s %s (%d body bytes) = %d %s, want %d", c.method, c.path, len(c.body), code, b, c.want)
		}
	}
	resp := rawExchange(t, in, "POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
		"\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
	if !strings.HasPrefix(resp, "HTTP/1.1 411") {
		t.Errorf("a chunked index body: %q, want 411", resp)
	}
	if code, b, _ := in.post("/v2/models/mlp/infer", mlpBody(), auth); code != http.StatusOK {
		t.Errorf("infer on mlp after the refused calls = %d %s, want 200", code, b)
	}
}

// TestStopDuringRepositoryLoad stops the master while a load's new
// generation boots: the stop completes, the load call returns (503 or
// its outcome), and no process of the master is left. REPO_STOP_ROUNDS
// repeats it (default 1).
func TestStopDuringRepositoryLoad(t *testing.T) {
	for i := range envInt("REPO_STOP_ROUNDS", 1) {
		t.Run(fmt.Sprint(i), stopDuringRepositoryLoad)
	}
}

func stopDuringRepositoryLoad(t *testing.T) {
	tag := fmt.Sprintf("SV_STOP_RELOAD_TAG=%d.%d", os.Getpid(), time.Now().UnixNano())
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp", "fixed"}, env: []string{tag},
		extra: "model_control: explicit\nstartup_models: [mlp]\n"})
	spawned := strings.Count(in.log.String(), `"worker spawned"`)
	loaded := make(chan int, 1)
	go func() {
		resp, err := repoClient.Post(in.url+"/v2/repository/models/fixed/load", "application/json", nil)
		if err != nil {
			loaded <- 0
			return
		}
		resp.Body.Close()
		loaded <- resp.StatusCode
	}()
	pollUntil(t, 60*time.Second, "the load spawns a worker of the new generation", func() bool {
		return strings.Count(in.log.String(), `"worker spawned"`) > spawned
	})
	if out, err := in.cli("stop"); err != nil {
		t.Errorf("supervisor stop during a load: %v\n%s", err, out)
	}
	in.waitExit(60 * time.Second)
	select {
	case code := <-loaded:
		t.Logf("the load answered %d", code)
	case <-time.After(30 * time.Second):
		t.Error("the load has not returned 30s after the master exited")
	}
	pollUntil(t, 10*time.Second, "no process of this master exists", func() bool {
		return len(taggedProcesses(t, tag)) == 0
	})
}

// logHasLine reports whether one line of the instance's log has every part.
func logHasLine(in *instance, parts ...string) bool {
	for _, line := range strings.Split(in.log.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestRepositoryLoadDuringSIGHUP sends SIGHUP while a load runs: the two
// are serialised by the reload queue, the load answers 200, and a later
// SIGHUP keeps the API-loaded model although startup_models leaves it out.
func TestRepositoryLoadDuringSIGHUP(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp", "fixed"},
		extra: "model_control: explicit\nstartup_models: [mlp]\n"})
	loaded := make(chan string, 1)
	go func() {
		resp, err := repoClient.Post(in.url+"/v2/repository/models/fixed/load", "application/json", nil)
		if err != nil {
			loaded <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		loaded <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	sendSignal(t, in.cmd.Process.Pid, syscall.SIGHUP)
	select {
	case got := <-loaded:
		if got != "200 " {
			t.Fatalf("load during a SIGHUP = %s, want 200", got)
		}
	case <-time.After(150 * time.Second):
		t.Fatal("the load has not returned in 150s")
	}
	gen := in.status().Generation
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	if st := in.status(); st.Generation <= gen {
		t.Errorf("generation %d after a reload, want more than %d", st.Generation, gen)
	}
	idx := repoIndex(t, in, "")
	wantIndexState(t, idx, "fixed", "READY", "")
	wantIndexState(t, idx, "mlp", "READY", "")
	wantAPIState(t, in, map[string]string{"fixed": "loaded"})
}
