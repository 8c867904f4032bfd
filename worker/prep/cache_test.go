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
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/respredis"
	"github.com/supervisor-dev/supervisor/internal/respredis/redistest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// cacheKey decodes a V2 request (headerLen -1 for JSON) and returns its key.
func cacheKey(t *testing.T, body string, headerLen int) request {
	t.Helper()
	req, err := v2.DecodeInferRequest([]byte(body), headerLen)
	if err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	c := &modelCache{identity: "m\x00v1"}
	return c.key(req, req.Inputs)
}

func TestCacheKey(t *testing.T) {
	jsonReq := cacheKey(t, `{"id":"a","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}]}`, -1)
	header := `{"id":"b","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}}],` +
		`"parameters":{"binary_data_output":true}}`
	data := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	data = binary.LittleEndian.AppendUint32(data, math.Float32bits(-2))
	if bin := cacheKey(t, header+string(data), len(header)); bin != jsonReq {
		t.Error("the same tensors in JSON and in binary have different keys")
	}
	for name, body := range map[string]string{
		"other values":     `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-3]}]}`,
		"other shape":      `{"inputs":[{"name":"x","datatype":"FP32","shape":[2,1],"data":[1.5,-2]}]}`,
		"other input name": `{"inputs":[{"name":"y","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}]}`,
		"classification":   `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}],"outputs":[{"name":"y","parameters":{"classification":1}}]}`,
		"an output named":  `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}],"outputs":[{"name":"y"}]}`,
	} {
		if cacheKey(t, body, -1) == jsonReq {
			t.Errorf("%s: same key as the original request", name)
		}
	}
	// The same 8 bytes as two FP32 or one FP64/INT64 are different inputs.
	i64 := `{"inputs":[{"name":"x","datatype":"INT64","shape":[1],"parameters":{"binary_data_size":8}}]}`
	f64 := `{"inputs":[{"name":"x","datatype":"FP64","shape":[1],"parameters":{"binary_data_size":8}}]}`
	if cacheKey(t, i64+string(data), len(i64)) == cacheKey(t, f64+string(data), len(f64)) {
		t.Error("same bytes with another datatype share a key")
	}
	other := &modelCache{identity: "m\x00v2"}
	req, _ := v2.DecodeInferRequest([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}]}`), -1)
	if other.key(req, req.Inputs) == jsonReq {
		t.Error("another model identity (a new version) shares the key")
	}
}

// imageCache is a fresh response cache for an image model of identity id.
func imageCache(t *testing.T, id string) *modelCache {
	t.Helper()
	seg, err := respcache.Create(filepath.Join(t.TempDir(), "img.cache"), respcache.MinBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(seg.Close)
	return &modelCache{seg: seg, identity: id}
}

func TestImageCacheKey(t *testing.T) {
	c := &modelCache{identity: "img\x00v1"}
	req := &v2.InferRequest{}
	a, b := []byte("image a"), []byte("image b")
	k := c.imageKey(req, [][]byte{a, b})
	for name, other := range map[string]request{
		"other image":        c.imageKey(req, [][]byte{a, []byte("image c")}),
		"other order":        c.imageKey(req, [][]byte{b, a}),
		"split differently":  c.imageKey(req, [][]byte{[]byte("image ai"), []byte("mage b")}),
		"one image fewer":    c.imageKey(req, [][]byte{a}),
		"other preprocess":   (&modelCache{identity: "img\x00v2"}).imageKey(req, [][]byte{a, b}),
		"classification":     c.imageKey(&v2.InferRequest{Outputs: []v2.RequestedOutput{{Name: "y", Classification: 1}}}, [][]byte{a, b}),
		"the same as tensor": c.key(req, []tensor.Tensor{{Name: "x", DType: tensor.Bytes, Shape: []int64{2}, Data: tensor.AppendBytesElement(tensor.AppendBytesElement(nil, a), b)}}),
	} {
		if other == k {
			t.Errorf("%s: same key as the original images", name)
		}
	}
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
	waitState(t, g, gateState{SmallIn: 1})
	if st := cache.seg.Stats(); st.Hits != 3 || st.Misses != 1 || inf.hits.Load() != 1 {
		t.Fatalf("%d hits, %d misses, %d infer requests; want 3, 1, 1", st.Hits, st.Misses, inf.hits.Load())
	}

	other := postImage(h, encodePNG(t, 641, 480))
	waitState(t, g, gateState{SmallIn: 1, SmallWaiting: 1})
	shut.Release()
	answered(t, other, fasthttp.StatusOK, "another image")
	if st := cache.seg.Stats(); st.Misses != 2 || inf.hits.Load() != 2 {
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
	if st := cache.seg.Stats(); st.Hits != 0 || st.Misses != 1 || st.BytesUsed != 0 {
		t.Fatalf("after a failed inference: %+v, want 1 miss and nothing stored", st)
	}
	exits.Store(false)
	first := answered(t, postImage(h, img), fasthttp.StatusOK, "the retry")
	if st := cache.seg.Stats(); st.Hits != 0 || st.Misses != 2 || st.BytesUsed == 0 {
		t.Fatalf("after the retry: %+v, want 2 misses and its answer stored", st)
	}
	exits.Store(true) // a hit must not need the infer worker
	if got := answered(t, postImage(h, img), fasthttp.StatusOK, "the hit"); got != first {
		t.Fatalf("the hit answered %s, want %s", got, first)
	}
	if st, n := cache.seg.Stats(), inf.hits.Load(); st.Hits != 1 || n != 2 {
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
	cache.current.Store(&modelA)
	model.Store("sha256:b")
	value.Store(2)
	fromB := answer("told A, answered by B")
	if got := answer("B's answer again"); got != fromB || inf.hits.Load() != 1 {
		t.Fatalf("the repeat answered %s after %d infer requests, want B's %s from the cache", got, inf.hits.Load(), fromB)
	}
	cache.current.Store(&modelA) // a prep worker told A again
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

// TestModelsShareARedisClient: two models naming the same Redis share one
// client (one pool, one bound on SETs); a model naming another has its own.
func TestModelsShareARedisClient(t *testing.T) {
	var procs []worker.Processing
	for i, url := range []string{"redis://127.0.0.1:1/0", "redis://127.0.0.1:1/0", "redis://127.0.0.1:2/0"} {
		path := filepath.Join(t.TempDir(), "m.cache")
		seg, err := respcache.Create(path, respcache.MinBytes)
		if err != nil {
			t.Fatal(err)
		}
		seg.Close()
		procs = append(procs, worker.Processing{Model: "m" + strconv.Itoa(i), Cache: &worker.ResponseCache{Path: path, Redis: url}})
	}
	cs := openCaches(procs, zerolog.Nop())
	if len(cs) != 3 || cs["m0"].redis == nil || cs["m2"].redis == nil {
		t.Fatalf("caches %v, want 3 with Redis", cs)
	}
	if cs["m0"].redis != cs["m1"].redis || cs["m0"].redis == cs["m2"].redis {
		t.Fatal("want one Redis client per server URL, shared by its models")
	}
}

// TestBadRedisEntryIsNotCopiedLocally: an entry in the shared Redis that
// is not tensors (another writer under the prefix, a format change) is a
// miss and stays out of the local segment, so that a good entry stored
// later in Redis is found; a good one is copied into the segment.
func TestBadRedisEntryIsNotCopiedLocally(t *testing.T) {
	srv := redistest.Start(t)
	rc, err := respredis.New(srv.URL, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	c := imageCache(t, "img\x00v1")
	c.redis = rc
	k := c.imageKey(&v2.InferRequest{}, [][]byte{[]byte("image")}).at("sha256:m")
	rc.Set(k, []byte("not tensors"), time.Minute, c.seg.MaxEntry())
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the bad SET lands", func() bool {
		_, ok := rc.Get(k, time.Time{}, c.seg.MaxEntry())
		return ok
	})
	if _, ok := c.get(k, time.Now(), time.Time{}); ok {
		t.Fatal("a Redis entry that is not tensors hit")
	}
	if _, ok := c.seg.Get(nil, k, time.Now()); ok {
		t.Fatal("a Redis entry that is not tensors was copied into the local segment")
	}
	good := tensor.AppendTensors(nil, []tensor.Tensor{{Name: "y", DType: tensor.FP32, Shape: []int64{1}, Data: make([]byte, 4)}})
	rc.Set(k, good, time.Minute, c.seg.MaxEntry())
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the good entry is served from Redis", func() bool {
		outs, ok := c.get(k, time.Now(), time.Time{})
		return ok && len(outs) == 1 && outs[0].Name == "y"
	})
	if _, ok := c.seg.Get(nil, k, time.Now()); !ok {
		t.Fatal("a good Redis hit was not copied into the local segment")
	}
}
