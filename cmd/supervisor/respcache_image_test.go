package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestResponseCacheImage serves the shared SqueezeNet as an image model
// with a response cache, keyed on the image bytes sent: a real photo as
// base64 in JSON, as raw bytes in binary form and as a raw image body is
// one entry, each hit answering exactly what the miss did (worker/prep's
// TestImageCacheHitDecodesNothing proves a hit decodes nothing); another
// photo misses; and a reload that changes the preprocess settings
// (channel_order) makes the first photo miss once more, then hit.
func TestResponseCacheImage(t *testing.T) {
	dir := sharedTestdata(t)
	item := squeezenetItem(dir, 1) + "    response_cache: {enable: true, max_bytes: 1MiB}\n"
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"}, maxBodyBytes: "16MiB", modelItems: item})
	cat := readPhoto(t, dir, "winml_cat.jpg")
	first := squeezenetInfer(t, in, jsonPhoto(t, cat), nil)
	wantModelCache(t, in, "squeezenet", 0, 1)

	header := `{"inputs":[{"name":"data_0","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":` +
		strconv.Itoa(4+len(cat)) + `}}],"outputs":[{"name":"softmaxout_1","parameters":{"classification":1}}]}`
	bin := append([]byte(header), tensor.AppendBytesElement(nil, cat)...)
	for name, got := range map[string][]byte{
		"binary":   squeezenetInfer(t, in, bin, map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))}),
		"raw body": squeezenetInfer(t, in, cat, map[string]string{"Content-Type": "image/jpeg"}),
	} {
		if !bytes.Equal(got, first) {
			t.Errorf("%s hit answered\n%s\nwant the miss's\n%s", name, got, first)
		}
	}
	wantModelCache(t, in, "squeezenet", 2, 1)

	if fish := squeezenetInfer(t, in, jsonPhoto(t, readPhoto(t, dir, "ortex_goldfish.jpg")), nil); bytes.Equal(fish, first) {
		t.Fatal("another photo got the cat's answer")
	}
	wantModelCache(t, in, "squeezenet", 2, 2)

	cfg, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in.config, bytes.Replace(cfg, []byte("channel_order: BGR"), []byte("channel_order: RGB"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	rgb := squeezenetInfer(t, in, jsonPhoto(t, cat), nil)
	wantModelCache(t, in, "squeezenet", 2, 3)
	if again := squeezenetInfer(t, in, jsonPhoto(t, cat), nil); !bytes.Equal(again, rgb) {
		t.Fatalf("after the reload, the hit answered\n%s\nwant the reloaded model's miss\n%s", again, rgb)
	}
	wantModelCache(t, in, "squeezenet", 3, 3)
}

// readPhoto reads one of the shared photos.
func readPhoto(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "images", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonPhoto is a JSON request of one base64 photo for SqueezeNet's top-1
// class.
func jsonPhoto(t *testing.T, photo []byte) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"inputs":  []v2Tensor{{"data_0", "BYTES", []int64{1}, []string{base64.StdEncoding.EncodeToString(photo)}}},
		"outputs": []any{map[string]any{"name": "softmaxout_1", "parameters": map[string]any{"classification": 1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// squeezenetInfer posts b to squeezenet and wants 200.
func squeezenetInfer(t *testing.T, in *instance, b []byte, hdr map[string]string) []byte {
	t.Helper()
	code, resp, _ := in.post("/v2/models/squeezenet/infer", b, hdr)
	if code != http.StatusOK {
		t.Fatalf("infer: %d %s", code, resp)
	}
	return resp
}
