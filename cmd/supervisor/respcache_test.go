package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
)

// TestResponseCache runs the local response cache through a real
// supervisor with two prep workers: a repeated request is a hit whichever
// prep worker takes it, answers exactly what the first one got (with its
// own id), a binary request with the same tensors is a hit too, and a
// different input is a miss.
func TestResponseCache(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"},
		modelItems: fmt.Sprintf("  - {name: cached, path: %s, response_cache: {enable: true, max_bytes: 1MiB, ttl: 1h}}\n",
			filepath.Join(modelsDir, "mlp.onnx"))})
	body := func(id string, data []float32) []byte {
		b, err := json.Marshal(map[string]any{"id": id, "inputs": []v2Tensor{{"x", "FP32", []int64{1, 16}, data}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	infer := func(b []byte, hdr map[string]string) []byte {
		t.Helper()
		code, resp, _ := in.post("/v2/models/cached/infer", b, hdr)
		if code != http.StatusOK {
			t.Fatalf("infer: %d %s", code, resp)
		}
		return resp
	}
	first := infer(body("first", seq(16, 1)), nil)
	for i := range 6 {
		id := "again-" + strconv.Itoa(i)
		got := infer(body(id, seq(16, 1)), nil)
		want := bytes.Replace(first, []byte(`"id":"first"`), []byte(`"id":"`+id+`"`), 1)
		if !bytes.Equal(got, want) {
			t.Fatalf("hit %d answered\n%s\nwant\n%s", i, got, want)
		}
	}
	wantCache(t, in, 6, 1)

	// The same tensors in binary form share the key: a hit, whose binary
	// outputs are what the uncached model answers.
	header := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"binary_data_size":64}}],"parameters":{"binary_data_output":true}}`
	bin := append([]byte(header), orttest.F32Bytes(seq(16, 1))...)
	hdr := map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))}
	_, plain, _ := in.post("/v2/models/mlp/infer", bin, hdr)
	cached := infer(bin, hdr)
	if len(plain) < 64 || !bytes.HasSuffix(cached, plain[len(plain)-64:]) || !strings.Contains(string(cached), `"binary_data_size"`) {
		t.Fatalf("binary hit = %q, want the uncached model's binary outputs %q", cached, plain)
	}
	wantCache(t, in, 7, 1)

	if other := infer(body("other", seq(16, 2)), nil); bytes.Equal(other[bytes.Index(other, []byte(`"outputs"`)):], first[bytes.Index(first, []byte(`"outputs"`)):]) {
		t.Fatal("a different input got the cached answer")
	}
	wantCache(t, in, 7, 2)
	resp, err := httpClient.Get(in.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`nv_cache_num_hits_per_model{model="cached",version="1"} 7`, `supervisor_response_cache_bytes{model="cached"`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// wantCache checks the cached model's cache_hit and cache_miss counts.
func wantCache(t *testing.T, in *instance, hits, misses uint64) {
	t.Helper()
	st := modelStats(t, in, "cached").InferenceStats
	if st.CacheHit.Count != hits || st.CacheMiss.Count != misses || (hits > 0 && st.CacheHit.NS == 0) {
		t.Fatalf("cache_hit %+v, cache_miss %+v; want %d hits, %d misses", st.CacheHit, st.CacheMiss, hits, misses)
	}
}
