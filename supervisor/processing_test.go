package supervisor

import (
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestProcessing: prep workers are told only about the models with an
// image preprocess or a postprocess, with every key carried over.
func TestProcessing(t *testing.T) {
	c, err := config.ParseConfig([]byte(`models:
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
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	procs := processing(c)
	if len(procs) != 1 || procs[0].Model != "cls" || procs[0].Image == nil || procs[0].Image.DType != "FP16" ||
		procs[0].Image.Width != 256 || procs[0].Image.MaxRequestPixels != 3000000 || procs[0].Image.Height != 0 || procs[0].Image.Scale != float32(1.0/255) ||
		!reflect.DeepEqual(procs[0].Classify, &worker.Classify{Output: "prob", Labels: "l.txt", Softmax: true, TopK: 5}) {
		t.Errorf("processing() = %+v", procs)
	}
}
