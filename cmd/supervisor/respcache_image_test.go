package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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
	first := modelInfer(t, in, "squeezenet", jsonPhoto(t, cat), nil)
	wantModelCache(t, in, "squeezenet", 0, 1)

	header := `{"inputs":[{"name":"data_0","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":` +
		strconv.Itoa(4+len(cat)) + `}}],"outputs":[{"name":"softmaxout_1","parameters":{"classification":1}}]}`
	bin := append([]byte(header), tensor.AppendBytesElement(nil, cat)...)
	for name, got := range map[string][]byte{
		"binary":   modelInfer(t, in, "squeezenet", bin, map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))}),
		"raw body": modelInfer(t, in, "squeezenet", cat, map[string]string{"Content-Type": "image/jpeg"}),
	} {
		if !bytes.Equal(got, first) {
			t.Errorf("%s hit answered\n%s\nwant the miss's\n%s", name, got, first)
		}
	}
	wantModelCache(t, in, "squeezenet", 2, 1)

	if fish := modelInfer(t, in, "squeezenet", jsonPhoto(t, readPhoto(t, dir, "ortex_goldfish.jpg")), nil); bytes.Equal(fish, first) {
		t.Fatal("another photo got the cat's answer")
	}
	wantModelCache(t, in, "squeezenet", 2, 2)

	reloadEdited(t, in, "channel_order: BGR", "channel_order: RGB")
	rgb := modelInfer(t, in, "squeezenet", jsonPhoto(t, cat), nil)
	wantModelCache(t, in, "squeezenet", 2, 3)
	if again := modelInfer(t, in, "squeezenet", jsonPhoto(t, cat), nil); !bytes.Equal(again, rgb) {
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
