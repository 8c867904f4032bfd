package main

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

// mlpBytes is the MLP model of seed, marshalled: every seed has the same
// size, other weights.
func mlpBytes(t *testing.T, seed uint64) []byte {
	t.Helper()
	b, err := onnxmodel.MLP(seed).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// installModel puts b at path as a deploy would: written beside it with
// modification time mtime (cp -p keeps the source's), then renamed over
// it.
func installModel(t *testing.T, path string, b []byte, mtime time.Time) {
	t.Helper()
	tmp := path + ".new"
	writeBytes(t, tmp, b)
	if err := os.Chtimes(tmp, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// mlpOutput is the y of an mlp answer's body.
func mlpOutput(t *testing.T, body []byte) []float32 {
	t.Helper()
	var r struct {
		Outputs []struct {
			Data []float32 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Outputs) != 1 {
		t.Fatalf("not an mlp answer (%v): %s", err, body)
	}
	return r.Outputs[0].Data
}

// near says whether y is the reference output want, within float error.
func near(y, want []float32) bool {
	if len(y) != len(want) {
		return false
	}
	for i := range y {
		if math.Abs(float64(y[i]-want[i])) > 1e-4*max(1, math.Abs(float64(want[i]))) {
			return false
		}
	}
	return true
}

// wantMLPAnswer checks that body is the answer of MLP(seed) to x,
// computed in Go.
func wantMLPAnswer(t *testing.T, body []byte, seed uint64, x []float32) {
	t.Helper()
	if y, want := mlpOutput(t, body), onnxmodel.NewMLPWeights(seed).Forward(x); !near(y, want) {
		t.Fatalf("answer %v, want MLP(%d)'s %v", y, seed, want)
	}
}

// modelIdentity is the model_identity parameter of model's metadata.
func modelIdentity(t *testing.T, in *instance, model string) string {
	t.Helper()
	code, body, _ := in.get("/v2/models/" + model)
	var md struct {
		Parameters struct {
			ModelIdentity string `json:"model_identity"`
		} `json:"parameters"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &md) != nil {
		t.Fatalf("metadata of %s: %d %s", model, code, body)
	}
	return md.Parameters.ModelIdentity
}

// TestResponseCacheAcrossModelSwaps: reloads swap the cached model's file
// between two sets of weights (A, B: same size, other modification
// times) while clients send distinct requests; during each reload old
// prep workers send requests to new infer workers. The file ends as A.
// Then every request is sent again, and each answer, a hit or computed,
// must be A's (computed in Go): an answer stored under the identity the
// prep worker believed rather than the one of the model that computed it
// would now serve B's weights for A.
func TestResponseCacheAcrossModelSwaps(t *testing.T) {
	const swaps, clients, perClient = 6, 4, 2000
	files := map[uint64][]byte{1: mlpBytes(t, 1), 2: mlpBytes(t, 2)}
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	mtimes := map[uint64]time.Time{1: base, 2: base.Add(time.Minute)}
	path := filepath.Join(t.TempDir(), "m.onnx")
	installModel(t, path, files[1], mtimes[1])
	in := startCachedModel(t, path, "")

	var mu sync.Mutex
	var sent [][]float32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				select {
				case <-stop:
					return
				default:
				}
				x := seq(16, 1+float32(c*perClient+i)/1000)
				code, _, _ := in.post("/v2/models/cached/infer", cacheBody(t, "", x), nil)
				if code == http.StatusOK {
					mu.Lock()
					sent = append(sent, x)
					mu.Unlock()
				}
			}
		})
	}
	for i := range swaps {
		seed := uint64(2 - i%2) // B, A, B, ...: A last
		installModel(t, path, files[seed], mtimes[seed])
		if out, err := in.cli("reload"); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("reload %d: %v\n%s", i+1, err, out)
		}
	}
	close(stop)
	wg.Wait()

	hitsBefore := modelStats(t, in, "cached").InferenceStats.CacheHit.Count
	a, b := onnxmodel.NewMLPWeights(1), onnxmodel.NewMLPWeights(2)
	wrong, ofB := 0, 0
	for _, x := range sent {
		y := mlpOutput(t, cachedInfer(t, in, cacheBody(t, "check", x), nil))
		if !near(y, a.Forward(x)) {
			wrong++
			if near(y, b.Forward(x)) {
				ofB++
			}
		}
	}
	hits := modelStats(t, in, "cached").InferenceStats.CacheHit.Count - hitsBefore
	t.Logf("%d swaps, %d distinct requests under load, checked again: %d cache hits, %d wrong (%d of them B's answers)",
		swaps, len(sent), hits, wrong, ofB)
	if wrong > 0 {
		t.Fatalf("%d of %d answers after the swaps are not model A's (%d are B's), with %d cache hits", wrong, len(sent), ofB, hits)
	}
	if hits == 0 {
		t.Fatal("no request sent again hit the cache: nothing was checked against it")
	}
}
