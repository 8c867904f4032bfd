package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

// versionFiles writes MLP(seed) for each version v (seed v) under dir as
// Triton lays a repository out, dir/v/model.onnx, and returns the paths.
func versionFiles(t *testing.T, versions ...int) map[int]string {
	t.Helper()
	dir := t.TempDir()
	out := map[int]string{}
	for _, v := range versions {
		p := filepath.Join(dir, fmt.Sprint(v), "model.onnx")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeBytes(t, p, mlpBytes(t, uint64(v)))
		out[v] = p
	}
	return out
}

// versionsItem is the models: item of the versioned model vm: the
// versions listed, each with its file, and policy (YAML flow, "" none).
func versionsItem(files map[int]string, versions []int, policy string) string {
	var b strings.Builder
	b.WriteString("  - name: vm\n    response_cache: {enable: true, max_bytes: 1MiB, ttl: 1h}\n    versions:\n")
	for _, v := range versions {
		fmt.Fprintf(&b, "      - {version: %d, path: %s}\n", v, files[v])
	}
	if policy != "" {
		fmt.Fprintf(&b, "    version_policy: %s\n", policy)
	}
	return b.String()
}

// versionAnswer posts x to path and returns the answer's model_name,
// model_version and y (status 200 wanted).
func versionAnswer(t *testing.T, in *instance, path string, x []float32) (name, version string, y []float32) {
	t.Helper()
	code, body, _ := in.post(path, cacheBody(t, "", x), nil)
	if code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, code, body)
	}
	var r struct {
		ModelName    string `json:"model_name"`
		ModelVersion string `json:"model_version"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r.ModelName, r.ModelVersion, mlpOutput(t, body)
}

// TestModelVersions: a model with three versions and version_policy
// latest 2 serves versions 2 and 3, each with its own weights (computed
// in Go); a request naming no version goes to the highest (3); version 1
// is not served (404, and 400 on its ready route, as Triton), nor is the
// served name vm@2 a model. Metadata lists the ready versions (asked
// without one) or the one asked; config, stats and the repository index
// list each version; gRPC ModelInfer with model_version picks it; the
// response cache never answers a version with another's answer.
func TestModelVersions(t *testing.T) {
	files := versionFiles(t, 1, 2, 3)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"fixed"},
		modelItems: versionsItem(files, []int{1, 2, 3}, "{latest: {num_versions: 2}}")})
	x := seq(16, 1.5)
	for _, c := range []struct {
		path, version string
		seed          uint64
	}{
		{"/v2/models/vm/versions/2/infer", "2", 2},
		{"/v2/models/vm/versions/3/infer", "3", 3},
		{"/v2/models/vm/infer", "3", 3},
		{"/v2/models/vm/versions/2/infer", "2", 2}, // a cache hit now: still v2's
		{"/v2/models/vm/infer", "3", 3},
	} {
		name, version, y := versionAnswer(t, in, c.path, x)
		if name != "vm" || version != c.version || !near(y, onnxmodel.NewMLPWeights(c.seed).Forward(x)) {
			t.Errorf("%s answered %s version %s %v, want vm version %s with MLP(%d)'s answer", c.path, name, version, y, c.version, c.seed)
		}
	}
	for path, want := range map[string]int{
		"/v2/models/vm/versions/1/infer": http.StatusNotFound,
		"/v2/models/vm/versions/1":       http.StatusNotFound,
		"/v2/models/vm/versions/1/ready": http.StatusBadRequest,
		"/v2/models/vm/versions/2/ready": http.StatusOK,
		"/v2/models/vm/ready":            http.StatusOK,
		"/v2/models/vm@2":                http.StatusNotFound,
		"/v2/models/vm@2/infer":          http.StatusNotFound,
	} {
		method, body := "GET", []byte(nil)
		if strings.HasSuffix(path, "/infer") {
			method, body = "POST", cacheBody(t, "", x)
		}
		code, resp, _ := in.do(method, path, body, nil)
		if code != want {
			t.Errorf("%s %s: %d %s, want %d", method, path, code, resp, want)
		}
		if strings.Contains(path, "/versions/1") && code != http.StatusOK && !strings.Contains(string(resp), `serves version 2, 3`) {
			t.Errorf("%s: %s, want the versions served named", path, resp)
		}
	}
	for path, want := range map[string][]string{"/v2/models/vm": {"2", "3"}, "/v2/models/vm/versions/2": {"2"}} {
		code, body, _ := in.get(path)
		var md struct {
			Name     string   `json:"name"`
			Versions []string `json:"versions"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &md) != nil || md.Name != "vm" || !slices.Equal(md.Versions, want) {
			t.Errorf("GET %s: %d %s, want name vm, versions %v", path, code, body, want)
		}
	}
	if code, body, _ := in.get("/v2/models/vm/versions/3/config"); code != http.StatusOK || !strings.Contains(string(body), `"name":"vm"`) {
		t.Errorf("config of version 3: %d %s", code, body)
	}
	st := getStats(t, in, "/v2/models/vm/stats")
	if len(st) != 2 || st[0].Name != "vm" || st[0].Version != "2" || st[1].Version != "3" {
		t.Fatalf("stats of vm: %+v, want versions 2 and 3", st)
	}
	// The same x: v2 ran it once, then hit; v3 missed (v2's answer is
	// not v3's), ran it once, then hit twice.
	if v2 := st[0].InferenceStats; v2.Success.Count != 1 || v2.CacheHit.Count != 1 || v2.CacheMiss.Count != 1 {
		t.Errorf("stats of version 2: %+v, want 1 run, 1 miss, 1 cache hit", v2)
	}
	one := getStats(t, in, "/v2/models/vm/versions/3/stats")
	if len(one) != 1 || one[0].Version != "3" || one[0].InferenceStats.Success.Count != 1 || one[0].InferenceStats.CacheMiss.Count != 1 ||
		one[0].InferenceStats.CacheHit.Count != 2 {
		t.Errorf("stats of version 3: %+v, want its own alone: 1 run, 1 miss, 2 hits", one)
	}
	code, body, _ := in.post("/v2/repository/index", nil, nil)
	var entries []indexEntry
	if code != http.StatusOK || json.Unmarshal(body, &entries) != nil {
		t.Fatalf("index: %d %s", code, body)
	}
	want := []indexEntry{{"fixed", "1", "READY", ""}, {"vm", "2", "READY", ""}, {"vm", "3", "READY", ""}}
	if !slices.Equal(entries, want) {
		t.Errorf("index %+v, want %+v", entries, want)
	}

	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for version, seed := range map[string]uint64{"2": 2, "3": 3, "": 3} {
		req := mlpRequest("g", x)
		req.ModelName, req.ModelVersion = "vm", version
		r, err := c.ModelInfer(ctx, req)
		if err != nil {
			t.Fatalf("ModelInfer version %q: %v", version, err)
		}
		wantVersion := version
		if version == "" {
			wantVersion = "3"
		}
		if r.ModelName != "vm" || r.ModelVersion != wantVersion || len(r.RawOutputContents) != 1 ||
			!near(fp32Values(r.RawOutputContents[0]), onnxmodel.NewMLPWeights(seed).Forward(x)) {
			t.Errorf("ModelInfer version %q: %s version %s, want MLP(%d)'s answer", version, r.ModelName, r.ModelVersion, seed)
		}
	}
	req := mlpRequest("g", x)
	req.ModelName, req.ModelVersion = "vm", "1"
	if _, err := c.ModelInfer(ctx, req); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("ModelInfer version 1: %v, want NotFound", err)
	}
	md, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "vm"})
	if err != nil || !slices.Equal(md.Versions, []string{"2", "3"}) {
		t.Errorf("ModelMetadata: %v %v, want versions 2, 3", md, err)
	}
	for version, want := range map[string]bool{"1": false, "2": true, "": true} {
		if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "vm", Version: version}); err != nil || r.Ready != want {
			t.Errorf("ModelReady version %q: %v %v, want ready %v", version, r, err, want)
		}
	}
	gst, err := c.ModelStatistics(ctx, &pb.ModelStatisticsRequest{Name: "vm", Version: "2"})
	if err != nil || len(gst.ModelStats) != 1 || gst.ModelStats[0].Name != "vm" || gst.ModelStats[0].Version != "2" {
		t.Errorf("ModelStatistics version 2: %v %v, want its entry alone", gst, err)
	}
}

func fp32Values(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// versionClients are clients that send requests to a version of vm
// (MLP(version)) until stopped, each with its own inputs, and count the
// answers that are that version's, and those that are not. A version
// being retired may also refuse (refused): 404 once the config no longer
// has it, or 503 from a worker that retired it under the request.
type versionClients struct {
	version           int
	ok, failed        atomic.Int64
	refused           atomic.Int64
	firstFailure      atomic.Value
	stop              chan struct{}
	wg                sync.WaitGroup
	mayBeRetired      bool
	lastRefusalStatus atomic.Int64
}

func startVersionClients(t *testing.T, in *instance, clients int) *versionClients {
	return startClientsOf(t, in, 1, clients, false)
}

func startClientsOf(t *testing.T, in *instance, version, clients int, mayBeRetired bool) *versionClients {
	vc := &versionClients{version: version, stop: make(chan struct{}), mayBeRetired: mayBeRetired}
	want := onnxmodel.NewMLPWeights(uint64(version))
	path := fmt.Sprintf("/v2/models/vm/versions/%d/infer", version)
	for c := range clients {
		vc.wg.Go(func() {
			for i := 0; i < 100000; i++ {
				select {
				case <-vc.stop:
					return
				default:
				}
				x := seq(16, 1+float32(c*100000+i)/1e5)
				code, body, _ := in.post(path, cacheBody(t, "", x), nil)
				if code == http.StatusOK && near(mlpOutput(t, body), want.Forward(x)) && strings.Contains(string(body), fmt.Sprintf(`"model_version":"%d"`, version)) {
					vc.ok.Add(1)
					continue
				}
				if mayBeRetired && (code == http.StatusNotFound || code == http.StatusServiceUnavailable) {
					vc.refused.Add(1)
					vc.lastRefusalStatus.Store(int64(code))
					continue
				}
				vc.failed.Add(1)
				vc.firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", code, body))
			}
		})
	}
	t.Cleanup(vc.end)
	return vc
}

// answered waits until the clients got n more answers of their version.
func (vc *versionClients) answered(t *testing.T, what string, n int64) {
	t.Helper()
	before := vc.ok.Load()
	pollUntil(t, 30*time.Second, what, func() bool { return vc.ok.Load() >= before+n })
}

func (vc *versionClients) end() {
	select {
	case <-vc.stop:
	default:
		close(vc.stop)
	}
	vc.wg.Wait()
}

// check stops the clients and fails t if any answer was neither their
// version's nor, for one being retired, a refusal.
func (vc *versionClients) check(t *testing.T, across string) {
	t.Helper()
	vc.end()
	t.Logf("%d requests to version %d %s, %d refused, %d failed", vc.ok.Load(), vc.version, across, vc.refused.Load(), vc.failed.Load())
	if vc.failed.Load() > 0 {
		t.Errorf("%d requests to version %d failed %s, first: %v", vc.failed.Load(), vc.version, across, vc.firstFailure.Load())
	}
}

// reloadVM rewrites vm's item in in's config and reloads; it returns the
// CLI's output.
func reloadVM(t *testing.T, in *instance, item string) string {
	t.Helper()
	b, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	start := strings.Index(cfg, "  - name: vm\n")
	end := strings.Index(cfg, "prep:\n")
	writeBytes(t, in.config, []byte(cfg[:start]+item+cfg[end:]))
	out, err := in.cli("reload")
	if err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	return out
}

// TestModelVersionReload: while 4 clients send requests to version 1,
// reloads add version 3 (policy all), then retire version 2 (policy
// specific [1, 3]). Both keep the two infer workers (same pids: the
// models are changed in place, docs/models.md#model-versions) and the
// reload says so. Every request to version 1 succeeds with version 1's
// answer; after the first reload version 3 answers, a request naming no
// version goes to it and its runs count in its statistics (the
// scoreboard records follow); after the second, version 2 is 404 and
// the others still answer.
func TestModelVersionReload(t *testing.T) {
	files := versionFiles(t, 1, 2, 3)
	in := startInstance(t, options{prepWorkers: 2, inferWorkers: 2, modelNames: []string{"fixed"},
		modelItems: versionsItem(files, []int{1, 2}, "{all: {}}")})
	if _, version, _ := versionAnswer(t, in, "/v2/models/vm/infer", seq(16, 1)); version != "2" {
		t.Fatalf("unversioned went to version %s, want 2", version)
	}
	vc := startVersionClients(t, in, 4)
	vc.answered(t, "version 1 answers under load", 20)
	pidsBefore := inferPIDs(in)
	keptInPlace := func(out, what string) {
		t.Helper()
		t.Logf("reload %s: %s", what, strings.TrimSpace(out))
		if pids := inferPIDs(in); len(pids) != 2 || !slices.Equal(pids, pidsBefore) {
			t.Errorf("infer worker pids %v before %s, %v after: want them kept", pidsBefore, what, pids)
		}
		if !strings.Contains(out, "models changed in place infer-0, infer-1;") {
			t.Errorf("reload %s said %q, want both infer workers changed in place", what, out)
		}
	}
	out := reloadVM(t, in, versionsItem(files, []int{1, 2, 3}, "{all: {}}"))
	keptInPlace(out, "adding version 3")
	vc.answered(t, "version 1 answers after the first reload", 20)
	x := seq(16, 2)
	if _, version, y := versionAnswer(t, in, "/v2/models/vm/infer", x); version != "3" || !near(y, onnxmodel.NewMLPWeights(3).Forward(x)) {
		t.Errorf("after adding version 3, unversioned answered version %s", version)
	}
	if st := getStats(t, in, "/v2/models/vm/versions/3/stats"); len(st) != 1 || st[0].ExecutionCount < 1 {
		t.Errorf("stats of version 3 after it ran: %+v, want its run counted", st)
	}
	// The scoreboard records name version 3 (shm.Slot.SetModels): its
	// runs reach /metrics (Triton labels: model="vm", version="3").
	pollUntil(t, 30*time.Second, "version 3's runs in /metrics", func() bool {
		return scrapeMetrics(t, in)[`nv_inference_exec_count{model="vm",version="3"}`] >= 1
	})
	// Requests to version 2 while it is retired: answered by it, or
	// refused (404, 503); none fails otherwise or hangs.
	v2 := startClientsOf(t, in, 2, 2, true)
	v2.answered(t, "version 2 answers under load", 10)
	out = reloadVM(t, in, versionsItem(files, []int{1, 2, 3}, "{specific: {versions: [1, 3]}}"))
	keptInPlace(out, "retiring version 2")
	pollUntil(t, 30*time.Second, "requests to the retired version 2 refused", func() bool { return v2.refused.Load() >= 10 })
	v2.check(t, "while it was retired")
	if code := v2.lastRefusalStatus.Load(); code != http.StatusNotFound {
		t.Errorf("the last refusal of version 2 was %d, want 404 once retired", code)
	}
	vc.answered(t, "version 1 answers after the second reload", 20)
	vc.check(t, "across two reloads")
	if code, body, _ := in.post("/v2/models/vm/versions/2/infer", cacheBody(t, "", seq(16, 1)), nil); code != http.StatusNotFound {
		t.Errorf("retired version 2: %d %s, want 404", code, body)
	}
	if _, version, _ := versionAnswer(t, in, "/v2/models/vm/versions/3/infer", seq(16, 1)); version != "3" {
		t.Errorf("version 3 answered as %s", version)
	}
	for _, w := range in.status().Workers {
		if w.Role == "infer" && len(w.UnavailableModels) > 0 {
			t.Errorf("%s reports unavailable models %v, want none (version 2 retired)", w.Name, w.UnavailableModels)
		}
	}
}

// TestModelVersionInPlaceLoadFails: a reload adds version 2, whose file
// is no ONNX model. The infer worker stays (same pid) and version 1
// serves on under 4 clients without a failure; the reload reports
// version 2 unavailable; it answers 503 with its reason and the index
// has it UNAVAILABLE.
func TestModelVersionInPlaceLoadFails(t *testing.T) {
	files := versionFiles(t, 1, 2)
	writeBytes(t, files[2], []byte("not an ONNX model"))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"fixed"},
		modelItems: versionsItem(files, []int{1}, "{all: {}}")})
	vc := startVersionClients(t, in, 4)
	vc.answered(t, "version 1 answers under load", 20)
	pidsBefore := inferPIDs(in)
	out := reloadVM(t, in, versionsItem(files, []int{1, 2}, "{all: {}}"))
	if pids := inferPIDs(in); !slices.Equal(pids, pidsBefore) {
		t.Errorf("infer worker pids %v before, %v after: want it kept", pidsBefore, pids)
	}
	if !strings.Contains(out, "model unavailable (the others serve): vm@2") && !strings.Contains(out, "model unavailable (the others serve): vm") {
		t.Errorf("reload said %q, want version 2 reported unavailable", out)
	}
	vc.answered(t, "version 1 answers after the reload", 20)
	vc.check(t, "across the reload")
	x := seq(16, 0.5)
	if code, body, _ := in.post("/v2/models/vm/versions/2/infer", cacheBody(t, "", x), nil); code != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), `model \"vm\" version 2 is unavailable`) {
		t.Errorf("version 2: %d %s, want 503 naming the version", code, body)
	}
	if _, version, _ := versionAnswer(t, in, "/v2/models/vm/infer", x); version != "1" {
		t.Errorf("unversioned answered version %s, want 1 (the highest ready)", version)
	}
	_, b, _ := in.post("/v2/repository/index", nil, nil)
	var entries []indexEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatalf("index: %s", b)
	}
	want := []indexEntry{{"fixed", "1", "READY", ""}, {"vm", "1", "READY", ""}}
	if len(entries) != 3 || !slices.Equal(entries[:2], want) || entries[2].Name != "vm" || entries[2].Version != "2" ||
		entries[2].State != "UNAVAILABLE" || entries[2].Reason == "" {
		t.Errorf("index %+v, want vm 1 READY, vm 2 UNAVAILABLE with its reason", entries)
	}
}

// TestModelVersionInPlaceCrash: a reload adds version 2, whose warm-up
// kills the process (SIGFPE: integer Mod by a zero the graph computes).
// The infer worker dies loading it in place and restarts at once with
// the new models, version 2 skipped (one restart: it does not die on it
// again); the reload returns once that worker serves, reporting version
// 2 unavailable, and version 1 answers.
func TestModelVersionInPlaceCrash(t *testing.T) {
	files := versionFiles(t, 1, 2)
	b, err := onnxmodel.ModByZero().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	writeBytes(t, files[2], b)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"fixed"},
		modelItems: versionsItem(files, []int{1}, "{all: {}}")})
	pidsBefore := inferPIDs(in)
	out := reloadVM(t, in, versionsItem(files, []int{1, 2}, "{all: {}}"))
	if !strings.Contains(out, "model unavailable (the others serve): vm") || !strings.Contains(out, "died") {
		t.Errorf("reload said %q, want version 2 reported unavailable, its worker died on it", out)
	}
	for _, w := range in.status().Workers {
		if w.Role == "infer" && (w.PID == pidsBefore[0] || w.Restarts != 1 || w.State != "ready") {
			t.Errorf("%s: pid %d (was %d), %d restarts, %s; want a new worker, restarted once, ready", w.Name, w.PID, pidsBefore[0], w.Restarts, w.State)
		}
	}
	// Spawned at start, then once: the restart skipped version 2.
	n := 0
	for _, line := range strings.Split(in.log.String(), "\n") {
		if strings.Contains(line, `"worker":"infer-0"`) && strings.Contains(line, `"worker spawned"`) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("infer-0 spawned %d times, want 2 (at start, then once after dying on version 2)", n)
	}
	x := seq(16, 0.75)
	if code, body, _ := in.post("/v2/models/vm/versions/2/infer", cacheBody(t, "", x), nil); code != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), "died") {
		t.Errorf("version 2: %d %s, want 503 saying a worker died on it", code, body)
	}
	if _, version, y := versionAnswer(t, in, "/v2/models/vm/versions/1/infer", x); version != "1" || !near(y, onnxmodel.NewMLPWeights(1).Forward(x)) {
		t.Errorf("version 1 answered %s %v", version, y)
	}
}

// TestModelVersionFileChangeReplaces: a reload after version 1's file
// changed (other weights) replaces the infer worker (a new pid), as any
// change to a model it serves does, and version 1 then answers with the
// new weights.
func TestModelVersionFileChangeReplaces(t *testing.T) {
	files := versionFiles(t, 1, 2)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"fixed"},
		modelItems: versionsItem(files, []int{1, 2}, "{all: {}}")})
	pidsBefore := inferPIDs(in)
	writeBytes(t, files[1], mlpBytes(t, 5))
	out := reloadVM(t, in, versionsItem(files, []int{1, 2}, "{all: {}}"))
	if pids := inferPIDs(in); len(pids) != 1 || slices.Equal(pids, pidsBefore) {
		t.Errorf("infer worker pids %v before, %v after: want it replaced", pidsBefore, pids)
	}
	if !strings.Contains(out, "replaced infer-0") || !strings.Contains(out, "models changed in place none") {
		t.Errorf("reload said %q, want infer-0 replaced, none changed in place", out)
	}
	x := seq(16, 0.25)
	if _, version, y := versionAnswer(t, in, "/v2/models/vm/versions/1/infer", x); version != "1" || !near(y, onnxmodel.NewMLPWeights(5).Forward(x)) {
		t.Errorf("version 1 answered %s %v, want the new file's MLP(5)", version, y)
	}
}

// TestModelVersionUnavailable: version 2's file is no ONNX model, so it
// fails to load while version 1 serves (model isolation): a request
// naming no version goes to version 1, the highest ready one; version 2
// answers 503 with its reason; metadata lists version 1 only; the index
// has version 2 UNAVAILABLE and version 1 READY.
func TestModelVersionUnavailable(t *testing.T) {
	files := versionFiles(t, 1, 2)
	writeBytes(t, files[2], []byte("not an ONNX model"))
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"fixed"},
		modelItems: versionsItem(files, []int{1, 2}, "{all: {}}")})
	x := seq(16, 0.5)
	if name, version, y := versionAnswer(t, in, "/v2/models/vm/infer", x); name != "vm" || version != "1" || !near(y, onnxmodel.NewMLPWeights(1).Forward(x)) {
		t.Errorf("unversioned answered %s version %s, want vm version 1 with MLP(1)'s answer", name, version)
	}
	if code, body, _ := in.post("/v2/models/vm/versions/2/infer", cacheBody(t, "", x), nil); code != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), `model \"vm\" version 2 is unavailable`) {
		t.Errorf("version 2: %d %s, want 503 naming the version", code, body)
	}
	code, body, _ := in.get("/v2/models/vm")
	if code != http.StatusOK || !strings.Contains(string(body), `"versions":["1"]`) {
		t.Errorf("metadata: %d %s, want versions [1]", code, body)
	}
	idx := map[string]indexEntry{}
	_, b, _ := in.post("/v2/repository/index", nil, nil)
	var entries []indexEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatalf("index: %s", b)
	}
	for _, e := range entries {
		idx[e.Name+"/"+e.Version] = e
	}
	if idx["vm/1"].State != "READY" || idx["vm/2"].State != "UNAVAILABLE" || idx["vm/2"].Reason == "" {
		t.Errorf("index %+v, want vm 1 READY, vm 2 UNAVAILABLE with its reason", entries)
	}
}

// TestModelVersionsRepositoryAPI: with model_control explicit, startup_models
// names the model (not a version), unload takes every version of it (their
// routes 404, the index lists each unloaded) and load brings them back,
// an override naming the model applied to each.
func TestModelVersionsRepositoryAPI(t *testing.T) {
	files := versionFiles(t, 1, 2)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"fixed"},
		modelItems: versionsItem(files, []int{1, 2}, "{all: {}}"), extra: "model_control: explicit\nstartup_models: [fixed, vm]\n"})
	x := seq(16, 1)
	if code, msg := repoCall(t, in, "/v2/repository/models/vm/unload", ""); code != http.StatusOK {
		t.Fatalf("unload vm = %d %s", code, msg)
	}
	for _, path := range []string{"/v2/models/vm/infer", "/v2/models/vm/versions/1/infer", "/v2/models/vm/versions/2/infer"} {
		if code, body, _ := in.post(path, cacheBody(t, "", x), nil); code != http.StatusNotFound {
			t.Errorf("%s after the unload: %d %s, want 404", path, code, body)
		}
	}
	_, b, _ := in.post("/v2/repository/index", nil, nil)
	var entries []indexEntry
	if json.Unmarshal(b, &entries) != nil || !slices.Equal(entries, []indexEntry{{"fixed", "1", "READY", ""},
		{"vm", "1", "UNAVAILABLE", "unloaded"}, {"vm", "2", "UNAVAILABLE", "unloaded"}}) {
		t.Errorf("index after the unload: %s", b)
	}
	override := `{"parameters":{"config":"{\"name\":\"vm\",\"max_batch_size\":4}"}}`
	if code, msg := repoCall(t, in, "/v2/repository/models/vm/load", override); code != http.StatusOK {
		t.Fatalf("load vm = %d %s", code, msg)
	}
	for version, seed := range map[string]uint64{"1": 1, "2": 2} {
		if _, got, y := versionAnswer(t, in, "/v2/models/vm/versions/"+version+"/infer", x); got != version || !near(y, onnxmodel.NewMLPWeights(seed).Forward(x)) {
			t.Errorf("version %s after the load answered as %s", version, got)
		}
		if !logHasLine(in, `"model":"vm@`+version+`"`, `"batching":{"max_batch_size":4,`) {
			t.Errorf("version %s was not loaded with the override's max_batch_size", version)
		}
	}
}

// inferPIDs are the pids of in's infer workers.
func inferPIDs(in *instance) []int {
	var pids []int
	for _, w := range in.status().Workers {
		if w.Role == "infer" {
			pids = append(pids, w.PID)
		}
	}
	return pids
}
