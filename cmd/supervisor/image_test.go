package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/imageprep"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// sharedTestdata is ../shared/testdata from the repository root, or skips
// the test.
func sharedTestdata(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "squeezenet", "SqueezeNet_fp16.onnx")); err != nil {
		t.Skipf("shared test data not found at %q (clone it next to the repository as ../shared/testdata): %v", dir, err)
	}
	return dir
}

// squeezenetItem is the models: entry that serves the shared SqueezeNet
// (from dir, sharedTestdata's answer) as an image model; topK > 0 adds the
// labels file and answers raw image bodies with the top topK classes.
func squeezenetItem(dir string, topK int) string {
	item := fmt.Sprintf("  - name: squeezenet\n    path: %s\n    preprocess: {kind: image, channel_order: BGR}\n",
		filepath.Join(dir, "squeezenet", "SqueezeNet_fp16.onnx"))
	if topK > 0 {
		item += fmt.Sprintf("    postprocess: {labels: %s, top_k: %d}\n", filepath.Join(dir, "squeezenet", "synset.txt"), topK)
	}
	return item
}

// photoCase is a shared photo and what SqueezeNet must call it.
type photoCase struct {
	file string
	ok   func(index int, label string) bool
	want string // for messages
}

func labelHas(subs ...string) func(int, string) bool {
	return func(_ int, label string) bool {
		for _, s := range subs {
			if strings.Contains(label, s) {
				return true
			}
		}
		return false
	}
}

// The expected top-1 classes of ../shared/testdata/README.md.
var squeezeNetPhotos = []photoCase{
	{"winml_cat.jpg", labelHas("tabby", "tiger cat", "Egyptian cat"), "a cat"},
	{"winml_kitten_224.png", labelHas("tabby", "tiger cat", "Egyptian cat"), "a cat"},
	{"ortex_goldfish.jpg", labelHas("goldfish"), "goldfish"},
	{"winml_fish.png", labelHas("goldfish", "tench", "shark", "ray", "eel", "gar,", "sturgeon", "puffer",
		"lionfish", "rock beauty", "anemone fish", "coho", "barracouta"), "a fish"},
	{"winml_hummingbird.jpg", labelHas("hummingbird"), "hummingbird"},
	{"ortex_wolves.jpg", labelHas("wolf"), "a wolf"},
	{"winml_dog.jpg", func(i int, _ string) bool { return i >= 151 && i <= 268 }, "a dog breed (151-268)"},
	{"ortext_pineapple.png", labelHas("pineapple"), "pineapple"},
}

// TestImageModelClassifiesPhotos serves the trained SqueezeNet as an image
// model and checks the top-1 class of every shared photo, sent in each of
// the three forms: a V2 BYTES input in JSON (base64, all photos in one
// request), the same with the binary extension (raw bytes), and one raw
// image body per photo.
func TestImageModelClassifiesPhotos(t *testing.T) {
	dir := sharedTestdata(t)
	in := startInstance(t, options{prepWorkers: 1, maxBodyBytes: "16MiB", modelItems: squeezenetItem(dir, 3)})

	code, body, _ := in.get("/v2/models/squeezenet")
	if code != http.StatusOK || !strings.Contains(string(body), `"inputs":[{"name":"data_0","datatype":"BYTES","shape":[-1]}]`) {
		t.Fatalf("metadata: %d %s, want the BYTES input data_0 [-1]", code, body)
	}
	photos := make([][]byte, len(squeezeNetPhotos))
	for i, p := range squeezeNetPhotos {
		var err error
		if photos[i], err = os.ReadFile(filepath.Join(dir, "images", p.file)); err != nil {
			t.Fatal(err)
		}
	}
	const url = "/v2/models/squeezenet/infer"
	t.Run("json", func(t *testing.T) {
		data := make([]string, len(photos))
		for i, p := range photos {
			data[i] = base64.StdEncoding.EncodeToString(p)
		}
		req, _ := json.Marshal(map[string]any{
			"inputs":  []v2Tensor{{"data_0", "BYTES", []int64{int64(len(photos)), 1}, data}},
			"outputs": []any{map[string]any{"name": "softmaxout_1", "parameters": map[string]any{"classification": 1}}},
		})
		code, body, _ := in.post(url, req, nil)
		checkTop1(t, squeezeNetPhotos, classesOf(t, code, body))
	})
	t.Run("binary", func(t *testing.T) {
		var data []byte
		for _, p := range photos {
			data = tensor.AppendBytesElement(data, p)
		}
		header, _ := json.Marshal(map[string]any{
			"inputs": []any{map[string]any{"name": "data_0", "datatype": "BYTES", "shape": []int{len(photos)},
				"parameters": map[string]any{"binary_data_size": len(data)}}},
			"outputs": []any{map[string]any{"name": "softmaxout_1", "parameters": map[string]any{"classification": 2}}},
		})
		code, body, _ := in.post(url, append(header, data...),
			map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))})
		checkTop1(t, squeezeNetPhotos, classesOf(t, code, body))
	})
	t.Run("raw body", func(t *testing.T) {
		for i, p := range squeezeNetPhotos {
			ct := "image/jpeg"
			if strings.HasSuffix(p.file, ".png") {
				ct = "image/png"
			}
			// top_k: 3 in the config: the raw body's response ranks 3.
			code, body, _ := in.post(url, photos[i], map[string]string{"Content-Type": ct})
			got := classesOf(t, code, body)
			if len(got) != 1 || len(got[0]) != 3 {
				t.Fatalf("%s: classes %q, want 1 row of 3", p.file, got)
			}
			checkTop1(t, squeezeNetPhotos[i:i+1], got)
		}
	})
}

// classesOf reads a response whose only output is a classification: one
// row of "score:index:label" strings per image.
func classesOf(t *testing.T, code int, body []byte) [][]string {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var resp struct {
		Outputs []struct {
			Name     string   `json:"name"`
			Datatype string   `json:"datatype"`
			Shape    []int    `json:"shape"`
			Data     []string `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Outputs) != 1 {
		t.Fatalf("response %.300s: %v, want one output", body, err)
	}
	o := resp.Outputs[0]
	if o.Name != "softmaxout_1" || o.Datatype != "BYTES" || len(o.Shape) != 2 || o.Shape[0]*o.Shape[1] != len(o.Data) {
		t.Fatalf("output %s %s %v with %d strings, want softmaxout_1 BYTES [n,k]", o.Name, o.Datatype, o.Shape, len(o.Data))
	}
	var rows [][]string
	for i := range o.Shape[0] {
		rows = append(rows, o.Data[i*o.Shape[1]:(i+1)*o.Shape[1]])
	}
	return rows
}

// checkTop1 checks the first class of each row against the photo's case.
func checkTop1(t *testing.T, cases []photoCase, rows [][]string) {
	t.Helper()
	if len(rows) != len(cases) {
		t.Fatalf("%d rows of classes for %d photos", len(rows), len(cases))
	}
	for i, c := range cases {
		parts := strings.SplitN(rows[i][0], ":", 3)
		if len(parts) != 3 {
			t.Errorf("%s: class %q is not score:index:label", c.file, rows[i][0])
			continue
		}
		index, _ := strconv.Atoi(parts[1])
		if !c.ok(index, parts[2]) {
			t.Errorf("%s: top-1 is %q, want %s", c.file, rows[i][0], c.want)
		}
	}
}

// TestImageModelBatchesAndErrors serves the generated default model
// (FP32 [-1,3,224,224], dynamic batch) as an image model, which needs no
// shared data: a batch of images runs as one tensor whose outputs match
// ONNX Runtime in-process on the same preprocessing, and bad images get
// 400s that say what is wrong.
func TestImageModelBatchesAndErrors(t *testing.T) {
	// A decode budget of 4 MiB: ample for the test images, not for a
	// 1×20,000 PNG (13 MB of resize rows).
	in := startInstance(t, options{prepWorkers: 1, prepSection: "max_decode_bytes: 4MiB", modelItems: fmt.Sprintf(`  - name: img
    path: %s
    preprocess:
      kind: image
      resize: shorter-crop
      scale: 1/255
      mean: [0.485, 0.456, 0.406]
      std: [0.229, 0.224, 0.225]
      max_pixels: 20000
      max_images: 2
`, filepath.Join(modelsDir, "default.onnx"))})
	orttest.Init(t)
	a, b := testJPEG(t, 120, 90), testPNG(t, 64, 100)
	url := "/v2/models/img/infer"

	t.Run("batch matches in-process", func(t *testing.T) {
		req := inferBody(t, v2Tensor{"input", "BYTES", []int64{2}, []string{
			base64.StdEncoding.EncodeToString(a), base64.StdEncoding.EncodeToString(b)}})
		code, body, _ := in.post(url, req, nil)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		cfg := imageprep.Config{Width: 224, Height: 224, Resize: imageprep.ShorterCrop, Scale: 1.0 / 255,
			Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}
		x := tensor.Tensor{Name: "input", DType: tensor.FP32, Shape: cfg.Shape(2), Data: make([]byte, 2*cfg.ImageBytes())}
		for i, img := range [][]byte{a, b} {
			if err := cfg.Preprocess(x.Data[i*cfg.ImageBytes():(i+1)*cfg.ImageBytes()], img); err != nil {
				t.Fatal(err)
			}
		}
		want, err := openLocal(t, "default.onnx").Run([]tensor.Tensor{x}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got v2Response
		if err := json.Unmarshal(body, &got); err != nil || len(got.Outputs) != 1 {
			t.Fatalf("decode %.200s: %v", body, err)
		}
		if tensor.FormatShape(got.Outputs[0].Shape) != "[2,1000]" {
			t.Fatalf("output shape %v, want [2,1000]", got.Outputs[0].Shape)
		}
		compareData(t, want[0], got.Outputs[0].Data)
	})

	gif := []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")
	bomb := testPNG(t, 200, 200) // 40,000 pixels, over max_pixels 20,000
	for _, tt := range []struct {
		name string
		body []byte
		hdr  map[string]string
		want string
	}{
		{"truncated JPEG", a[:len(a)/2], map[string]string{"Content-Type": "image/jpeg"}, "corrupt image"},
		{"GIF", gif, map[string]string{"Content-Type": "image/gif"}, "unsupported image format: GIF (want JPEG or PNG)"},
		{"over max_pixels", bomb, map[string]string{"Content-Type": "image/png"}, "image has too many pixels: PNG of 200×200 = 40000 pixels, over the limit of 20000"},
		{"over the decode budget", hostile.PNGBomb8(1, 20000), map[string]string{"Content-Type": "image/png"},
			"prep.max_decode_bytes is 4194304"},
		{"empty body", nil, map[string]string{"Content-Type": "image/png"}, "unsupported image format: no data"},
		{"over max_images", inferBody(t, v2Tensor{"input", "BYTES", []int64{3}, []string{"", "", ""}}), nil,
			`input "input": BYTES shape [3] makes 3 elements in the request, more than the 2 allowed (an image model's max_images)`},
		{"bad base64", inferBody(t, v2Tensor{"input", "BYTES", []int64{1}, []string{"QUJD="}}), nil,
			`input "input": image 0 is neither JPEG nor PNG bytes nor valid base64`},
		{"tensor sent", inferBody(t, v2Tensor{"input", "FP32", []int64{1}, []float32{1}}), nil,
			`input "input": datatype FP32 does not match the model's BYTES`},
		{"image to a tensor model", a, map[string]string{"Content-Type": "image/jpeg"}, `model "default" takes V2 tensors, not image bodies`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := url
			if strings.HasPrefix(tt.name, "image to") {
				u = "/v2/models/default/infer"
			}
			code, body, _ := in.post(u, tt.body, tt.hdr)
			var e struct{ Error string }
			_ = json.Unmarshal(body, &e)
			if code != http.StatusBadRequest || !strings.Contains(e.Error, tt.want) {
				t.Errorf("status %d %s, want 400 with an error containing %q", code, body, tt.want)
			}
		})
	}
}

// testJPEG and testPNG encode a gradient of w×h pixels.
func testJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, gradient(w, h), &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, gradient(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gradient(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8(128 + 100*math.Sin(float64(x+y)/7)), 255})
		}
	}
	return img
}
