package v2

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// imageValues returns n ImageNet-normalised pixel values, as a client
// preprocessing an RGB image would send them.
func imageValues(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	mean := [3]float32{0.485, 0.456, 0.406}
	std := [3]float32{0.229, 0.224, 0.225}
	v := make([]float32, n)
	for i := range v {
		c := i * 3 / n
		v[i] = (float32(r.IntN(256))/255 - mean[c]) / std[c]
	}
	return v
}

// defaultRequest is an infer request for the default model's FP32
// [1,3,224,224] input; digits is the formatting precision: -1 for the
// shortest float32 form, 17 for what Python's json writes for a float32
// widened to float64.
func defaultRequest(digits int) []byte {
	vals := imageValues(3 * 224 * 224)
	b := []byte(`{"id":"bench","inputs":[{"name":"input","shape":[1,3,224,224],"datatype":"FP32","data":[`)
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		if digits < 0 {
			b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
		} else {
			b = strconv.AppendFloat(b, float64(v), 'g', digits, 64)
		}
	}
	return append(b, `]}]}`...)
}

func benchDecode(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInferRequest(body, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeInferRequestDefault decodes the default model's request:
// 150,528 FP32 values in their shortest form.
func BenchmarkDecodeInferRequestDefault(b *testing.B) { benchDecode(b, defaultRequest(-1)) }

// BenchmarkDecodeInferRequestDefault17 is the same request with the
// 17-digit values Python clients produce from numpy float32 arrays.
func BenchmarkDecodeInferRequestDefault17(b *testing.B) { benchDecode(b, defaultRequest(17)) }

// BenchmarkEncodeInferResponse encodes a classifier's FP32 [1,1000] output.
func BenchmarkEncodeInferResponse(b *testing.B) {
	vals := imageValues(1000)
	t := tensor.Tensor{Name: "output", DType: tensor.FP32, Shape: []int64{1, 1000}, Data: f32Bytes(vals...)}
	req := &InferRequest{ID: "bench"}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendInferResponse(buf[:0], "resnet50", req, []tensor.Tensor{t})
	}
	b.SetBytes(int64(len(buf)))
}
