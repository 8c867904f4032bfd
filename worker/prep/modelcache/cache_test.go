package modelcache

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/internal/respcache"
	"github.com/supervisor-dev/supervisor/internal/respredis"
	"github.com/supervisor-dev/supervisor/internal/respredis/redistest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// cacheKey decodes a V2 Request (headerLen -1 for JSON) and returns its key.
func cacheKey(t *testing.T, body string, headerLen int) Request {
	t.Helper()
	req, err := v2.DecodeInferRequest([]byte(body), headerLen)
	if err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	c := &Cache{identity: "m\x00v1"}
	return c.Key(req, req.Inputs)
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
	other := &Cache{identity: "m\x00v2"}
	req, _ := v2.DecodeInferRequest([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2]}]}`), -1)
	if other.Key(req, req.Inputs) == jsonReq {
		t.Error("another model identity (a new version) shares the key")
	}
}

func TestImageCacheKey(t *testing.T) {
	c := &Cache{identity: "img\x00v1"}
	req := &v2.InferRequest{}
	a, b := []byte("image a"), []byte("image b")
	k := c.ImageKey(req, [][]byte{a, b})
	for name, other := range map[string]Request{
		"other image":        c.ImageKey(req, [][]byte{a, []byte("image c")}),
		"other order":        c.ImageKey(req, [][]byte{b, a}),
		"split differently":  c.ImageKey(req, [][]byte{[]byte("image ai"), []byte("mage b")}),
		"one image fewer":    c.ImageKey(req, [][]byte{a}),
		"other preprocess":   (&Cache{identity: "img\x00v2"}).ImageKey(req, [][]byte{a, b}),
		"classification":     c.ImageKey(&v2.InferRequest{Outputs: []v2.RequestedOutput{{Name: "y", Classification: 1}}}, [][]byte{a, b}),
		"the same as tensor": c.Key(req, []tensor.Tensor{{Name: "x", DType: tensor.Bytes, Shape: []int64{2}, Data: tensor.AppendBytesElement(tensor.AppendBytesElement(nil, a), b)}}),
	} {
		if other == k {
			t.Errorf("%s: same key as the original images", name)
		}
	}
}

// imageCache is a fresh response cache for an image model of identity id.
func imageCache(t *testing.T, id string) *Cache {
	t.Helper()
	seg, err := respcache.Create(filepath.Join(t.TempDir(), "img.cache"), respcache.MinBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(seg.Close)
	return &Cache{seg: seg, identity: id}
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
	cs := Open(procs, zerolog.Nop())
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
	k := c.ImageKey(&v2.InferRequest{}, [][]byte{[]byte("image")}).At("sha256:m")
	rc.Set(k, []byte("not tensors"), time.Minute, c.seg.MaxEntry())
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the bad SET lands", func() bool {
		_, ok := rc.Get(k, time.Time{}, c.seg.MaxEntry())
		return ok
	})
	if _, ok := c.Get(k, time.Now(), time.Time{}); ok {
		t.Fatal("a Redis entry that is not tensors hit")
	}
	if _, ok := c.seg.Get(nil, k, time.Now()); ok {
		t.Fatal("a Redis entry that is not tensors was copied into the local segment")
	}
	good := tensor.AppendTensors(nil, []tensor.Tensor{{Name: "y", DType: tensor.FP32, Shape: []int64{1}, Data: make([]byte, 4)}})
	rc.Set(k, good, time.Minute, c.seg.MaxEntry())
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the good entry is served from Redis", func() bool {
		outs, ok := c.Get(k, time.Now(), time.Time{})
		return ok && len(outs) == 1 && outs[0].Name == "y"
	})
	if _, ok := c.seg.Get(nil, k, time.Now()); !ok {
		t.Fatal("a good Redis hit was not copied into the local segment")
	}
}
