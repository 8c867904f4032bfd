package ort_test

import (
	"math/rand/v2"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// BenchmarkDefaultBatch1 measures one image through the default model on one
// intra-op thread, the configuration of one infer worker per core.
func BenchmarkDefaultBatch1(b *testing.B) { benchmarkDefault(b, 1) }

// BenchmarkDefaultBatch8 measures a batch of eight on one thread; infer/s
// against Batch1 shows what batching buys per core.
func BenchmarkDefaultBatch8(b *testing.B) { benchmarkDefault(b, 8) }

func benchmarkDefault(b *testing.B, batch int) {
	m, err := onnxmodel.Default(onnxmodel.DefaultSeed).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	s := orttest.Open(b, "default", m, ort.Options{IntraOpThreads: 1})
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, batch*3*224*224)
	for i := range x {
		x[i] = r.Float32()
	}
	in := []tensor.Tensor{{Name: "input", DType: tensor.FP32,
		Shape: []int64{int64(batch), 3, 224, 224}, Data: orttest.F32Bytes(x)}}
	if _, err := s.Run(in, nil); err != nil { // warm up: first Run plans memory
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Run(in, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "infer/s")
}
