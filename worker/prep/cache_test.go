package prep

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/modelcache"
)

// imageCache is a fresh response cache for an image model of identity id.
func imageCache(t *testing.T, id string) *modelcache.Cache {
	t.Helper()
	path := filepath.Join(t.TempDir(), "img.cache")
	seg, err := respcache.Create(path, respcache.MinBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(seg.Close)
	c := modelcache.Open([]worker.Processing{{Model: "img", Cache: &worker.ResponseCache{Path: path, Identity: id}}}, zerolog.Nop())["img"]
	if c == nil {
		t.Fatal("the segment did not open")
	}
	t.Cleanup(c.Segment().Close)
	return c
}

// TestImageCacheHitDecodesNothing: with the decode gate shut (its one
// small place held by the test), the same image as a raw body, as base64
// in JSON and as raw bytes in binary form is answered from the cache with
// the first answer, and nothing waits at the gate or reaches the infer
// worker; a different image misses and waits for the gate, which proves a
// decode would have.
func TestImageCacheHitDecodesNothing(t *testing.T) {
	g := testGate(1, 16<<20, 16<<20+200<<20)
	cache := imageCache(t, "img\x00v1")
	h, inf := cachedImageHandler(t, g, cache, nil)
	img := encodePNG(t, 640, 480)
	first := answered(t, postImage(h, img), fasthttp.StatusOK, "the first request")
	shut := mustEnter(t, g, 1) // shut: the one small place is ours
	jsonReq, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{"name": "x", "datatype": "BYTES", "shape": []int{1},
		"data": []string{base64.StdEncoding.EncodeToString(img)}}}})
	header := `{"inputs":[{"name":"x","datatype":"BYTES","shape":[1,1],"parameters":{"binary_data_size":` + strconv.Itoa(4+len(img)) + `}}]}`
	binReq := append([]byte(header), tensor.AppendBytesElement(nil, img)...)
	for name, done := range map[string]<-chan [2]string{
		"raw body": postImage(h, img),
		"json":     postInfer(h, jsonReq, map[string]string{"Content-Type": "application/json"}),
		"binary":   postInfer(h, binReq, map[string]string{headerLenHeader: strconv.Itoa(len(header))}),
	} {
		if got := answered(t, done, fasthttp.StatusOK, name+" hit"); got != first {
			t.Errorf("%s hit answered %s, want %s", name, got, first)
		}
	}
	waitState(t, g, decodegate.State{SmallIn: 1})
	if st := cache.Segment().Stats(); st.Hits != 3 || st.Misses != 1 || inf.hits.Load() != 1 {
		t.Fatalf("%d hits, %d misses, %d infer requests; want 3, 1, 1", st.Hits, st.Misses, inf.hits.Load())
	}

	other := postImage(h, encodePNG(t, 641, 480))
	waitState(t, g, decodegate.State{SmallIn: 1, SmallWaiting: 1})
	shut.Release()
	answered(t, other, fasthttp.StatusOK, "another image")
	if st := cache.Segment().Stats(); st.Misses != 2 || inf.hits.Load() != 2 {
		t.Fatalf("another image: %d misses, %d infer requests; want 2, 2", st.Misses, inf.hits.Load())
	}
}

// TestFailedInferenceIsNotCached: an infer worker that exits mid-request
// (its connection closes with no answer) makes a 502, and that failure
// is not stored: the same image sent again misses and reaches an infer
// worker, and only its successful answer is then served from the cache.
func TestFailedInferenceIsNotCached(t *testing.T) {
	var exits atomic.Bool
	exits.Store(true)
	cache := imageCache(t, "img\x00v1")
	h, inf := cachedImageHandler(t, testGate(1, 16<<20, 16<<20+200<<20), cache, &exits)
	img := encodePNG(t, 64, 48)
	answered(t, postImage(h, img), fasthttp.StatusBadGateway, "the request its infer worker exited on")
	if st := cache.Segment().Stats(); st.Hits != 0 || st.Misses != 1 || st.BytesUsed != 0 {
		t.Fatalf("after a failed inference: %+v, want 1 miss and nothing stored", st)
	}
	exits.Store(false)
	first := answered(t, postImage(h, img), fasthttp.StatusOK, "the retry")
	if st := cache.Segment().Stats(); st.Hits != 0 || st.Misses != 2 || st.BytesUsed == 0 {
		t.Fatalf("after the retry: %+v, want 2 misses and its answer stored", st)
	}
	exits.Store(true) // a hit must not need the infer worker
	if got := answered(t, postImage(h, img), fasthttp.StatusOK, "the hit"); got != first {
		t.Fatalf("the hit answered %s, want %s", got, first)
	}
	if st, n := cache.Segment().Stats(), inf.hits.Load(); st.Hits != 1 || n != 2 {
		t.Fatalf("%d hits, %d infer requests; want 1, 2", st.Hits, n)
	}
}

// TestCacheStoresUnderTheAnswersModel: an answer is stored under the
// model identity its infer worker sent, not the one the prep worker was
// told. A prep worker told model A whose infer worker (reloaded) answers
// with model B stores B's answer under B; told A again (a rollback) and
// answered by A, the same image misses and gets A's answer, where a
// store under the prep worker's belief would have served B's. An answer
// with no identity is not stored.
func TestCacheStoresUnderTheAnswersModel(t *testing.T) {
	var model atomic.Value
	var value atomic.Uint32
	cache := imageCache(t, "img\x00v1")
	out := tensor.Tensor{Name: "y", DType: tensor.FP32, Shape: []int64{1, 1}}
	h, inf := imageHandlerBy(t, testGate(1, 16<<20, 16<<20+200<<20), cache, out, func(ctx *fasthttp.RequestCtx) {
		if id := model.Load().(string); id != "" {
			ctx.Response.Header.Set(worker.ModelIDHeader, id)
		}
		o := out
		o.Data = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(value.Load())))
		ctx.SetBody(tensor.AppendTensors(nil, []tensor.Tensor{o}))
	})
	img := encodePNG(t, 64, 48)
	answer := func(what string) string {
		t.Helper()
		return answered(t, postImage(h, img), fasthttp.StatusOK, what)
	}
	modelA := "sha256:a"
	cache.SetCurrent(modelA)
	model.Store("sha256:b")
	value.Store(2)
	fromB := answer("told A, answered by B")
	if got := answer("B's answer again"); got != fromB || inf.hits.Load() != 1 {
		t.Fatalf("the repeat answered %s after %d infer requests, want B's %s from the cache", got, inf.hits.Load(), fromB)
	}
	cache.SetCurrent(modelA) // a prep worker told A again
	model.Store(modelA)
	value.Store(1)
	fromA := answer("told A, answered by A")
	if fromA == fromB || inf.hits.Load() != 2 {
		t.Fatalf("told A again: %s after %d infer requests, want A's own answer (B's was %s), computed", fromA, inf.hits.Load(), fromB)
	}
	if got := answer("A's answer again"); got != fromA || inf.hits.Load() != 2 {
		t.Fatalf("the repeat answered %s, want A's %s from the cache", got, fromA)
	}
	model.Store("")
	other := encodePNG(t, 65, 48)
	answered(t, postImage(h, other), fasthttp.StatusOK, "an answer with no model identity")
	answered(t, postImage(h, other), fasthttp.StatusOK, "again")
	if inf.hits.Load() != 4 {
		t.Fatalf("%d infer requests, want 4: an answer with no identity is not cached", inf.hits.Load())
	}
}
