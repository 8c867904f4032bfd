package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// The batching tests run the real served path (client -> lb -> prep ->
// infer batcher -> ORT) with one infer worker, so every request of a model
// meets the same batcher. Queue delays of an hour make batch formation
// depend only on which requests arrived, never on timing: a batch forms
// when it is full or reaches a preferred size.

func TestBatching(t *testing.T) {
	seqPath := writeSeqModel(t)
	in := startInstance(t, options{
		prepWorkers: 2,
		models:      map[string]string{"seq": seqPath},
		batching: map[string]string{
			"mlp":   "{max_batch_size: 8, max_queue_delay: 1h}",
			"seq":   "{max_batch_size: 8, max_queue_delay: 1h, preferred_batch_sizes: [2]}",
			"types": "{max_batch_size: 8, max_queue_delay: 1h, max_queue_size: 2}",
		},
	})
	orttest.Init(t)
	t.Run("batch forms and outputs split exactly", func(t *testing.T) { testBatchFormation(t, in) })
	t.Run("mixed shapes never mixed", func(t *testing.T) { testMixedShapes(t, in) })
	t.Run("queue full is 503 with Retry-After", func(t *testing.T) { testQueueFull(t, in) })
	t.Run("request timeout", func(t *testing.T) { testRequestTimeout(t, in) })
	t.Run("all models' stats", func(t *testing.T) {
		st := getStats(t, in, "/v2/models/stats")
		var names []string
		for _, m := range st {
			names = append(names, m.Name)
		}
		if got := strings.Join(names, ","); got != "default,fixed,mlp,seq,types" {
			t.Errorf("model_stats lists %s, want every model by name", got)
		}
	})
}

// testBatchFormation sends requests of 1, 2, 3 and 2 rows to the MLP
// (max_batch_size 8) at once: they can only run as one batch of 8, and each
// answer must be exactly what the model gives for that request's rows alone.
func testBatchFormation(t *testing.T, in *instance) {
	sess := openLocal(t, "mlp.onnx")
	rows := []int{1, 2, 3, 2}
	var results []<-chan served
	var want []tensor.Tensor
	for i, n := range rows {
		x := seq(n*onnxmodel.MLPIn, float32(i+1))
		out, err := sess.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{int64(n), onnxmodel.MLPIn}, Data: orttest.F32Bytes(x)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, out[0])
		results = append(results, postAsync(in, "mlp", inferBody(t, v2Tensor{"x", "FP32", []int64{int64(n), onnxmodel.MLPIn}, x})))
	}
	for i, r := range results {
		got := (<-r).ok(t)
		if len(got.Outputs) != 1 || tensor.FormatShape(got.Outputs[0].Shape) != tensor.FormatShape(want[i].Shape) {
			t.Fatalf("request %d (%d rows): outputs %+v, want y of shape %v", i, rows[i], got.Outputs, want[i].Shape)
		}
		compareBits(t, want[i], got.Outputs[0].Data)
	}
	st := modelStats(t, in, "mlp")
	if st.InferenceCount != 8 || st.ExecutionCount != 1 || len(st.BatchStats) != 1 ||
		st.BatchStats[0].BatchSize != 8 || st.BatchStats[0].ComputeInfer.Count != 1 {
		t.Errorf("mlp stats: %d rows in %d runs, batch_stats %+v; want 8 rows in one batch of 8", st.InferenceCount, st.ExecutionCount, st.BatchStats)
	}
	if is := st.InferenceStats; is.Success.Count != 4 || is.Fail.Count != 0 || is.Queue.Count != 4 || is.ComputeInfer.Count != 4 {
		t.Errorf("mlp inference_stats %+v, want 4 successful requests, each queued and computed once", is)
	}
}

// testMixedShapes sends two requests of 3 columns and two of 5 to a model
// whose second dimension is dynamic, with preferred batch size 2: each
// shape must form its own batch of 2.
func testMixedShapes(t *testing.T, in *instance) {
	var results []<-chan served
	var inputs [][]float32
	for i, cols := range []int64{3, 5, 3, 5} {
		x := seq(int(cols), float32(i+1))
		inputs = append(inputs, x)
		results = append(results, postAsync(in, "seq", inferBody(t, v2Tensor{"x", "FP32", []int64{1, cols}, x})))
	}
	for i, r := range results {
		got := (<-r).ok(t)
		y := got.Outputs[0]
		if tensor.FormatShape(y.Shape) != fmt.Sprintf("[1,%d]", len(inputs[i])) {
			t.Fatalf("request %d: y has shape %v, want [1,%d]", i, y.Shape, len(inputs[i]))
		}
		want := make([]float32, len(inputs[i]))
		for j, v := range inputs[i] {
			want[j] = v*2 + 1
		}
		compareData(t, tensor.Tensor{Name: "y", DType: tensor.FP32, Data: orttest.F32Bytes(want)}, y.Data)
	}
	st := modelStats(t, in, "seq")
	if st.ExecutionCount != 2 || len(st.BatchStats) != 1 || st.BatchStats[0].BatchSize != 2 || st.BatchStats[0].ComputeInfer.Count != 2 {
		t.Errorf("seq stats: %d runs, batch_stats %+v; want two batches of 2, one per shape", st.ExecutionCount, st.BatchStats)
	}
}

// testQueueFull fills the types model's queue (max_queue_size 2, nothing
// runs for an hour) with two requests that time out after 3s, and checks
// that a third is refused at once.
func testQueueFull(t *testing.T, in *instance) {
	body := typesBody(t, 3_000_000)
	blockers := []<-chan served{postAsync(in, "types", body), postAsync(in, "types", body)}
	pollUntil(t, 10*time.Second, "two requests queued for types", func() bool {
		return modelStats(t, in, "types").QueueDepth == 2
	})
	start := time.Now()
	r := <-postAsync(in, "types", typesBody(t, 0))
	r.unavailable(t, "full")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the refusal took %s; a full queue must refuse at once", d)
	}
	for _, b := range blockers {
		(<-b).unavailable(t, "timed out")
	}
	st := modelStats(t, in, "types")
	if st.QueueFull != 1 || st.Dropped != 2 || st.InferenceStats.Fail.Count != 3 || st.ExecutionCount != 0 {
		t.Errorf("types stats: queue_full %d, dropped %d, failed %d, runs %d; want 1, 2, 3, 0",
			st.QueueFull, st.Dropped, st.InferenceStats.Fail.Count, st.ExecutionCount)
	}
}

// testRequestTimeout sends one MLP row with a 300ms timeout: alone, with an
// hour's queue delay, it can only leave the queue by timing out.
func testRequestTimeout(t *testing.T, in *instance) {
	before := modelStats(t, in, "mlp")
	body := inferBodyParams(t, map[string]any{"timeout": 300_000, "priority": 1},
		v2Tensor{"x", "FP32", []int64{1, onnxmodel.MLPIn}, seq(onnxmodel.MLPIn, 1)})
	r := <-postAsync(in, "mlp", body)
	r.unavailable(t, "timed out")
	if r.elapsed < 300*time.Millisecond || r.elapsed > 20*time.Second {
		t.Errorf("timed out after %s, want 300ms or a little more", r.elapsed)
	}
	after := modelStats(t, in, "mlp")
	if after.InferenceStats.Fail.Count != before.InferenceStats.Fail.Count+1 || after.ExecutionCount != before.ExecutionCount {
		t.Errorf("mlp stats after the timeout: %+v, before %+v; want one more failure and no run", after, before)
	}
}

// TestStatsSumOverInferWorkers checks that /v2/models/{m}/stats is the sum
// over the infer workers, each of which the test also asks directly.
func TestStatsSumOverInferWorkers(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 2})
	const n = 6
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{2, 3}, seq(6, 1)})
	for range n {
		if code, resp, _ := in.post("/v2/models/fixed/infer", body, nil); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, resp)
		}
	}
	st := modelStats(t, in, "fixed")
	if st.InferenceCount != n || st.ExecutionCount != n || st.InferenceStats.Success.Count != n ||
		len(st.BatchStats) != 1 || st.BatchStats[0].BatchSize != 1 || st.BatchStats[0].ComputeInfer.Count != n {
		t.Errorf("fixed stats %+v, want %d unbatched runs (batch size 1)", st, n)
	}
	var sum uint64
	for _, w := range in.status().Workers {
		if w.Role != "infer" {
			continue
		}
		ws := inferWorkerStats(t, w.Socket)["fixed"]
		if ws.ExecutionCount == 0 {
			t.Errorf("infer worker %s ran no request; least-connections should have spread %d sequential requests", w.Name, n)
		}
		sum += ws.ExecutionCount
	}
	if sum != n {
		t.Errorf("the infer workers ran %d requests between them, want %d", sum, n)
	}
}

// served is one finished request.
type served struct {
	code    int
	body    []byte
	hdr     http.Header
	elapsed time.Duration
}

// postAsync sends a V2 infer request from its own goroutine.
func postAsync(in *instance, model string, body []byte) <-chan served {
	c := make(chan served, 1)
	go func() {
		start := time.Now()
		code, b, hdr := in.post("/v2/models/"+model+"/infer", body, nil)
		c <- served{code, b, hdr, time.Since(start)}
	}()
	return c
}

func (s served) ok(t *testing.T) v2Response {
	t.Helper()
	if s.code != http.StatusOK {
		t.Fatalf("status %d: %s", s.code, s.body)
	}
	var r v2Response
	if err := json.Unmarshal(s.body, &r); err != nil {
		t.Fatalf("decode response: %v\n%.300s", err, s.body)
	}
	return r
}

// unavailable checks a 503 that says when to retry and why.
func (s served) unavailable(t *testing.T, why string) {
	t.Helper()
	if s.code != http.StatusServiceUnavailable || s.hdr.Get("Retry-After") != "1" || !strings.Contains(string(s.body), why) {
		t.Errorf("got %d Retry-After %q %s; want 503, Retry-After 1 and an error saying %q", s.code, s.hdr.Get("Retry-After"), s.body, why)
	}
}

func inferBodyParams(t *testing.T, params map[string]any, inputs ...v2Tensor) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"parameters": params, "inputs": inputs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// typesBody is one row for the types model, with a timeout in
// microseconds (0 for none).
func typesBody(t *testing.T, timeoutUS int) []byte {
	params := map[string]any{}
	if timeoutUS > 0 {
		params["timeout"] = timeoutUS
	}
	return inferBodyParams(t, params,
		v2Tensor{"ids", "INT64", []int64{1, 4}, []int64{1, 2, 3, 4}},
		v2Tensor{"mask", "BOOL", []int64{1, 4}, []bool{true, false, true, false}})
}

// tritonStats is one entry of Triton's model_stats.
type tritonStats struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	batch.Stats
}

func getStats(t *testing.T, in *instance, path string) []tritonStats {
	t.Helper()
	code, body, _ := in.get(path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var st struct {
		ModelStats []tritonStats `json:"model_stats"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	return st.ModelStats
}

func modelStats(t *testing.T, in *instance, model string) batch.Stats {
	t.Helper()
	st := getStats(t, in, "/v2/models/"+model+"/stats")
	if len(st) != 1 || st[0].Name != model || st[0].Version != "1" {
		t.Fatalf("stats of %s: %+v, want one entry for it", model, st)
	}
	return st[0].Stats
}

// inferWorkerStats asks one infer worker for its statistics over its socket.
func inferWorkerStats(t *testing.T, socket string) map[string]batch.Stats {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}}}
	resp, err := c.Get("http://infer/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st map[string]batch.Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("stats of %s: %v\n%s", socket, err, b)
	}
	return st
}

// writeSeqModel writes a model whose second dimension is dynamic too:
// x FP32 [batch,len] -> y = 2x + 1.
func writeSeqModel(t *testing.T) string {
	t.Helper()
	m := onnxmodel.NewGraph("seq").
		Input("x", tensor.FP32, onnxmodel.Sym("batch"), onnxmodel.Sym("len")).
		Float32s("two", nil, []float32{2}).
		Float32s("one", nil, []float32{1}).
		Node("Mul", []string{"x", "two"}, []string{"x2"}).
		Node("Add", []string{"x2", "one"}, []string{"y"}).
		Output("y", tensor.FP32, onnxmodel.Sym("batch"), onnxmodel.Sym("len")).
		Model()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "seq.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// compareBits checks served FP32 values are bit-identical to the
// in-process run of the same rows alone: JSON carries float32 exactly, and
// ONNX Runtime gives each row the same bits whatever the batch around it
// (the same kernel and thread count), so batching must change nothing.
func compareBits(t *testing.T, want tensor.Tensor, got []json.RawMessage) {
	t.Helper()
	ref := orttest.F32s(want.Data)
	if len(got) != len(ref) {
		t.Fatalf("%s: got %d values, want %d", want.Name, len(got), len(ref))
	}
	for i, w := range ref {
		g, err := strconv.ParseFloat(string(got[i]), 32)
		if err != nil || math.Float32bits(float32(g)) != math.Float32bits(w) {
			t.Fatalf("%s[%d] = %s, want exactly %v (bits %#x)", want.Name, i, got[i], w, math.Float32bits(w))
		}
	}
}

// TestNonBatchableModelServesConcurrentRequests sends 32 requests at once
// to the fixed-shape model (max_batch_size 0): each runs on its own, and
// each answer is exactly x*2+1 of its own input, never a neighbour's.
func TestNonBatchableModelServesConcurrentRequests(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2, inferWorkers: 2})
	const n = 32
	var results []<-chan served
	var inputs [][]float32
	for i := range n {
		x := seq(6, float32(i+1))
		inputs = append(inputs, x)
		results = append(results, postAsync(in, "fixed", inferBody(t, v2Tensor{"x", "FP32", []int64{2, 3}, x})))
	}
	for i, r := range results {
		y := (<-r).ok(t).Outputs[0]
		want := make([]float32, len(inputs[i]))
		for j, v := range inputs[i] {
			want[j] = v*2 + 1
		}
		compareBits(t, tensor.Tensor{Name: fmt.Sprintf("y of request %d", i), DType: tensor.FP32, Data: orttest.F32Bytes(want)}, y.Data)
	}
	if st := modelStats(t, in, "fixed"); st.ExecutionCount != n || len(st.BatchStats) != 1 || st.BatchStats[0].BatchSize != 1 {
		t.Errorf("fixed stats: %d runs, batch_stats %+v; want %d runs of size 1", st.ExecutionCount, st.BatchStats, n)
	}
}
