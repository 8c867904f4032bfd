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
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/internal/respredis"
	"github.com/supervisor-dev/supervisor/internal/respredis/redistest"
)

// TestResponseCache runs the local response cache through a real
// supervisor with two prep workers: a repeated request is a hit whichever
// prep worker takes it, answers exactly what the first one got (with its
// own id), a binary request with the same tensors is a hit too, and a
// different input is a miss.
func TestResponseCache(t *testing.T) {
	in := startCached(t, "")
	body := func(id string, data []float32) []byte { return cacheBody(t, id, data) }
	infer := func(b []byte, hdr map[string]string) []byte { return cachedInfer(t, in, b, hdr) }
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
	wantModelCache(t, in, "cached", hits, misses)
}

// wantModelCache checks model's cache_hit and cache_miss counts.
func wantModelCache(t *testing.T, in *instance, model string, hits, misses uint64) {
	t.Helper()
	st := modelStats(t, in, model).InferenceStats
	if st.CacheHit.Count != hits || st.CacheMiss.Count != misses || (hits > 0 && st.CacheHit.NS == 0) {
		t.Fatalf("%s: cache_hit %+v, cache_miss %+v; want %d hits, %d misses", model, st.CacheHit, st.CacheMiss, hits, misses)
	}
}

// startCached starts an instance serving mlp and "cached" (mlp with a
// response cache, and Redis when redisURL is not "").
func startCached(t *testing.T, redisURL string) *instance {
	t.Helper()
	return startCachedModel(t, filepath.Join(modelsDir, "mlp.onnx"), redisURL)
}

// startCachedModel is startCached with the cached model's file.
func startCachedModel(t *testing.T, path, redisURL string) *instance {
	t.Helper()
	redisKey := ""
	if redisURL != "" {
		redisKey = ", redis: " + strconv.Quote(redisURL)
	}
	return startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"},
		modelItems: fmt.Sprintf("  - {name: cached, path: %s, response_cache: {enable: true, max_bytes: 1MiB, ttl: 1h%s}}\n",
			path, redisKey)})
}

// TestResponseCacheReload: a reload after the model file was replaced
// by other weights with the same size and modification time (cp -p of a
// retrained model) serves the new weights, makes the cached answers
// unreachable (the model's content identity is in the key) and shows the
// new identity in the model's metadata and the status: the same request misses once,
// with the new model's answer, then hits again.
func TestResponseCacheReload(t *testing.T) {
	a, b := mlpBytes(t, 1), mlpBytes(t, 2)
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	path := filepath.Join(t.TempDir(), "m.onnx")
	installModel(t, path, a, mtime)
	in := startCachedModel(t, path, "")
	x := seq(16, 1)
	req := cacheBody(t, "r", x)
	before := modelIdentity(t, in, "cached")
	wantMLPAnswer(t, cachedInfer(t, in, req, nil), 1, x)
	cachedInfer(t, in, req, nil)
	wantCache(t, in, 1, 1)
	installModel(t, path, b, mtime) // cp -p: other bytes, same size and mtime
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	wantMLPAnswer(t, cachedInfer(t, in, req, nil), 2, x)
	wantMLPAnswer(t, cachedInfer(t, in, req, nil), 2, x)
	wantCache(t, in, 2, 2)
	after := modelIdentity(t, in, "cached")
	if after == before || !strings.HasPrefix(after, "sha256:") {
		t.Fatalf("metadata model_identity %q after the reload, was %q: want another sha256", after, before)
	}
	for _, ms := range in.status().Models {
		if ms.Name == "cached" && ms.Identity != after {
			t.Fatalf("status shows model identity %q, the metadata %q", ms.Identity, after)
		}
	}
}

// cacheBody is a JSON request of one mlp row, with an id.
func cacheBody(t *testing.T, id string, data []float32) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "inputs": []v2Tensor{{"x", "FP32", []int64{1, 16}, data}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cachedInfer posts b to the cached model and wants 200.
func cachedInfer(t *testing.T, in *instance, b []byte, hdr map[string]string) []byte {
	t.Helper()
	return modelInfer(t, in, "cached", b, hdr)
}

// modelInfer posts b to model's infer route and wants 200.
func modelInfer(t *testing.T, in *instance, model string, b []byte, hdr map[string]string) []byte {
	t.Helper()
	code, resp, _ := in.post("/v2/models/"+model+"/infer", b, hdr)
	if code != http.StatusOK {
		t.Fatalf("infer %s: %d %s", model, code, resp)
	}
	return resp
}

// TestResponseCacheRedis: two supervisors share a real Redis, so the
// second answers the first's request from it; once Redis is killed,
// requests still succeed, as misses.
func TestResponseCacheRedis(t *testing.T) {
	srv := redistest.Start(t)
	a, b := startCached(t, srv.URL), startCached(t, srv.URL)
	first := cachedInfer(t, a, cacheBody(t, "a", seq(16, 1)), nil)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	polltest.Until(t, 10*time.Second, 20*time.Millisecond, "the answer is in Redis", func() bool {
		keys, err := rdb.Keys(t.Context(), respredis.KeyPrefix+"*").Result()
		return err == nil && len(keys) == 1
	})
	got := cachedInfer(t, b, cacheBody(t, "a", seq(16, 1)), nil)
	if !bytes.Equal(got, first) {
		t.Fatalf("the second supervisor answered\n%s\nwant the first's\n%s", got, first)
	}
	wantCache(t, b, 1, 0)

	srv.Kill()
	for i := range 5 {
		start := time.Now()
		cachedInfer(t, b, cacheBody(t, "k", seq(16, float32(i+3))), nil)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("a request with Redis killed took %s", d)
		}
	}
	wantCache(t, b, 1, 5)
}
