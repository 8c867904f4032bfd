package onnxmodel_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestResNet50: the generated ResNet-50 has torchvision's parameter count
// with BatchNormalization folded (25,530,472, in FP32 and FP16), loads in
// ONNX Runtime with an FP32 [batch,3,224,224] input and [batch,1000]
// output, and one batch-1 inference gives finite logits that differ per
// class; the FP16 model computes the same network (its logits within FP16
// rounding of the FP32 ones).
func TestResNet50(t *testing.T) {
	r := make([]float32, 3*224*224)
	for i := range r {
		r[i] = float32(i%251) / 251
	}
	x := []tensor.Tensor{{Name: "input", DType: tensor.FP32, Shape: []int64{1, 3, 224, 224}, Data: orttest.F32Bytes(r)}}
	logits := map[bool][]float32{}
	for _, fp16 := range []bool{false, true} {
		m := onnxmodel.ResNet50(onnxmodel.DefaultSeed, fp16)
		if got := m.Graph.Weights(); got != onnxmodel.ResNet50Params || got < 25_500_000 || got > 25_600_000 {
			t.Errorf("fp16=%v: %d parameters; want %d (ResNet-50's 25.5-25.6 M)", fp16, got, onnxmodel.ResNet50Params)
		}
		s := open(t, "resnet50", m)
		md := s.Metadata()
		if len(md.Inputs) != 1 || !reflect.DeepEqual(md.Inputs[0], tensor.Spec{Name: "input", DType: tensor.FP32, Shape: []int64{-1, 3, 224, 224}}) ||
			len(md.Outputs) != 1 || !reflect.DeepEqual(md.Outputs[0], tensor.Spec{Name: "logits", DType: tensor.FP32, Shape: []int64{-1, 1000}}) {
			t.Fatalf("fp16=%v: metadata %+v; want input FP32 [-1,3,224,224], logits FP32 [-1,1000]", fp16, md)
		}
		out, err := s.Run(x, nil)
		if err != nil {
			t.Fatalf("fp16=%v: %v", fp16, err)
		}
		if len(out) != 1 || !reflect.DeepEqual(out[0].Shape, []int64{1, 1000}) {
			t.Fatalf("fp16=%v: outputs %+v; want logits [1,1000]", fp16, out)
		}
		v := orttest.F32s(out[0].Data)
		lo, hi := v[0], v[0]
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				t.Fatalf("fp16=%v: logit %v is not finite", fp16, f)
			}
			lo, hi = min(lo, f), max(hi, f)
		}
		if hi-lo < 1e-3 || hi-lo > 1e4 {
			t.Errorf("fp16=%v: logits span [%g, %g]; want them to differ per class and stay far from overflow", fp16, lo, hi)
		}
		logits[fp16] = v
	}
	var diff, scale float64
	for i, f := range logits[false] {
		diff = max(diff, math.Abs(float64(f-logits[true][i])))
		scale = max(scale, math.Abs(float64(f)))
	}
	if diff > 0.05*scale {
		t.Errorf("FP16 logits differ from FP32 by up to %g (largest FP32 logit %g); want the same network", diff, scale)
	}
}
