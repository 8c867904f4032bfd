package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestConfigImageValues(t *testing.T) {
	c := mustParseConfig(t, `models:
  - name: cls
    path: m.onnx
    preprocess:
      kind: image
      width: 256
      resize: shorter-crop
      interpolation: nearest
      channel_order: BGR
      scale: 1/255
      mean: [0.485, 0.456, 0.406]
      std: [0.229, 0.224, 0.225]
      layout: NHWC
      dtype: FP16
      max_pixels: 1000000
      max_images: 8
      max_request_pixels: 3000000
    postprocess: {output: prob, labels: l.txt, softmax: true, top_k: 5}
  - name: plain
    path: p.onnx
    preprocess: {kind: tensor}
`, "t.yaml")
	want := defaultPreprocess()
	want.Kind, want.Width, want.Resize, want.Interpolation, want.ChannelOrder = KindImage, 256, "shorter-crop", "nearest", "BGR"
	want.Scale, want.Mean, want.Std = float32(1.0/255), [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
	want.Layout, want.DType, want.MaxPixels, want.MaxImages, want.MaxRequestPixels = "NHWC", "FP16", 1000000, 8, 3000000
	if got := c.Models[0].Preprocess; got == nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("preprocess = %+v, want %+v", got, want)
	}
	if got, want := c.Models[0].Postprocess, (&PostprocessConfig{Output: "prob", Labels: "l.txt", Softmax: true, TopK: 5}); !reflect.DeepEqual(got, want) {
		t.Errorf("postprocess = %+v, want %+v", got, want)
	}
	if got := c.Models[1].Preprocess; got == nil || got.Kind != KindTensor || c.Models[1].Postprocess != nil {
		t.Errorf("models[1] = %+v", c.Models[1])
	}
	// And it survives `supervisor check`'s output.
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back := mustParseConfig(t, string(out), "check-output")
	if !reflect.DeepEqual(plainConfig(back), plainConfig(c)) {
		t.Errorf("round trip through\n%s\nhave %+v\nwant %+v", out, plainConfig(back), plainConfig(c))
	}
}

func TestConfigImageErrors(t *testing.T) {
	model := "models:\n  - name: m\n    path: m.onnx\n"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown kind", model + "    preprocess:\n      kind: video\n",
			[]string{`t.yaml:5: models[0].preprocess.kind: "video" is not an input kind (use tensor, or image`}},
		{"image key under tensor", model + "    preprocess:\n      width: 224\n",
			[]string{`t.yaml:5: models[0].preprocess.width: applies only to kind: image`}},
		{"unknown key", model + "    preprocess:\n      kind: image\n      size: 224\n",
			[]string{`t.yaml:6: unknown key "size" in models[0].preprocess (known keys: kind, width, height,`}},
		{"bad values", model + `    preprocess:
      kind: image
      width: -1
      height: 9000
      resize: squash
      interpolation: bicubic
      channel_order: rgb
      scale: 0
      mean: [0, x, 0]
      std: [1, 0, 1]
      layout: CHW
      dtype: INT8
      max_pixels: 0
      max_images: 5000
      max_request_pixels: -1
`, []string{
			`t.yaml:6: models[0].preprocess.width: -1 is out of range (use 0 to take it from the model's input, or 1 to 8192)`,
			`t.yaml:7: models[0].preprocess.height: 9000 is out of range`,
			`t.yaml:8: models[0].preprocess.resize: "squash" is not one of stretch, shorter-crop`,
			`t.yaml:9: models[0].preprocess.interpolation: "bicubic" is not one of bilinear, nearest`,
			`t.yaml:10: models[0].preprocess.channel_order: "rgb" is not one of RGB, BGR`,
			`t.yaml:11: models[0].preprocess.scale: 0 must be a positive number`,
			`t.yaml:12: models[0].preprocess.mean[1]: want a number, got "x"`,
			`t.yaml:13: models[0].preprocess.std[1]: 0 must be a finite number other than 0`,
			`t.yaml:14: models[0].preprocess.layout: "CHW" is not one of NCHW, NHWC`,
			`t.yaml:15: models[0].preprocess.dtype: "INT8" is not one of FP32, FP16, UINT8`,
			`t.yaml:16: models[0].preprocess.max_pixels: 0 must be at least 1`,
			`t.yaml:17: models[0].preprocess.max_images: 5000 is out of range (use 1 to 4096)`,
			`t.yaml:18: models[0].preprocess.max_request_pixels: -1 is negative; use 0 (four times max_pixels)`,
		}},
		{"request budget under max_pixels", model + "    preprocess:\n      kind: image\n      max_pixels: 1000\n      max_request_pixels: 999\n",
			[]string{`t.yaml:7: models[0].preprocess.max_request_pixels: 999 is less than max_pixels (1000), so an image max_pixels allows could never be sent`}},
		{"mean not 3 numbers", model + "    preprocess:\n      kind: image\n      mean: [1, 2]\n",
			[]string{`t.yaml:6: models[0].preprocess.mean: want a list of 3 numbers, one per channel`}},
		{"bad fraction", model + "    preprocess:\n      kind: image\n      scale: 1/0\n",
			[]string{`t.yaml:6: models[0].preprocess.scale: "1/0" is not a number (e.g. 0.5, 1e-3, or a fraction such as 1/255)`}},
		{"uint8 normalised", model + "    preprocess:\n      kind: image\n      dtype: UINT8\n      scale: 1/255\n",
			[]string{`t.yaml:6: models[0].preprocess.dtype: UINT8 carries the raw 0–255 samples`}},
		{"top_k on a tensor model", model + "    postprocess:\n      top_k: 5\n",
			[]string{`t.yaml:5: models[0].postprocess.top_k: applies to raw image bodies, so only to a model with preprocess kind: image`}},
		{"softmax not a bool", model + "    postprocess:\n      softmax: yes please\n",
			[]string{`t.yaml:5: models[0].postprocess.softmax: "yes please" is not true or false`}},
		{"negative top_k", model + "    preprocess: {kind: image}\n    postprocess: {top_k: -1}\n",
			[]string{`t.yaml:5: models[0].postprocess.top_k: -1 is out of range`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}

func TestConfigCheckFilesLabels(t *testing.T) {
	dir := t.TempDir()
	modelPath := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(modelPath, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustParseConfig(t, "models:\n  - name: m\n    path: "+modelPath+"\n    postprocess:\n      labels: "+dir+"/nope.txt\n", "t.yaml")
	stubORTLibrary(t, c, dir)
	err := c.CheckFiles()
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), `t.yaml:5: models[0].postprocess.labels: model "m": cannot use labels file`) {
		t.Errorf("CheckFiles() = %v, want a missing labels file at line 5", err)
	}
}

// TestConfigSqueezeNetExample keeps configs/squeezenet.yaml valid and
// complete: it sets every key its effective config has.
func TestConfigSqueezeNetExample(t *testing.T) {
	c, err := LoadConfig("../../configs/squeezenet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Models[0].Preprocess
	if p == nil || p.Kind != KindImage || p.ChannelOrder != "BGR" || p.DType != "FP16" || c.Models[0].Postprocess == nil {
		t.Fatalf("squeezenet.yaml parsed as %+v", c.Models[0])
	}
	data, err := os.ReadFile("../../configs/squeezenet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	effective, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if have, want := configKeyPaths(t, data), configKeyPaths(t, effective); !reflect.DeepEqual(have, want) {
		t.Errorf("configs/squeezenet.yaml has keys %v, want %v", have, want)
	}
}
