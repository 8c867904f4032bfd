package ort_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// BenchmarkRaw is the in-process ceiling scripts/bench-serve compares the
// served numbers with: one model run after another, as an infer worker with
// one batcher instance runs them, at each batch size, on $BENCH_THREADS
// intra-op threads (default 1; the bench sets the served worker's count).
// Sub-benchmarks are named model=NAME/batch=ROWS. BENCH_CUDA=1 runs on
// CUDA device 0 (scripts/bench-serve sets CUDA_VISIBLE_DEVICES to its GPU),
// with BENCH_CUDNN as its cudnn_conv_algo_search.
// The ResNet-50-class models are built only when one of their
// sub-benchmarks runs (a second or two each).
func BenchmarkRaw(b *testing.B) {
	opts := ort.Options{IntraOpThreads: 1, CUDA: os.Getenv("BENCH_CUDA") == "1"}
	opts.GPU.CUDA.CuDNNConvAlgoSearch = os.Getenv("BENCH_CUDNN")
	if v, err := strconv.Atoi(os.Getenv("BENCH_THREADS")); err == nil && v > 0 {
		opts.IntraOpThreads = v
	}
	image := []int64{3, 224, 224}
	models := []struct {
		name  string
		model func() *onnxmodel.Model
		input string
		row   []int64
		sizes []int
	}{
		{"default", func() *onnxmodel.Model { return onnxmodel.Default(onnxmodel.DefaultSeed) }, "input", image, []int{1, 4, 8, 16}},
		{"mlp", func() *onnxmodel.Model { return onnxmodel.MLP(onnxmodel.DefaultSeed) }, "x", []int64{onnxmodel.MLPIn}, []int{1, 8, 32, 64}},
		{"resnet50", func() *onnxmodel.Model { return onnxmodel.ResNet50(onnxmodel.DefaultSeed, false) }, "input", image, []int{1, 8, 32}},
		{"resnet50-fp16", func() *onnxmodel.Model { return onnxmodel.ResNet50(onnxmodel.DefaultSeed, true) }, "input", image, []int{1, 8, 32}},
	}
	for _, m := range models {
		marshal := sync.OnceValues(func() ([]byte, error) { return m.model().Marshal() })
		for _, rows := range m.sizes {
			b.Run(fmt.Sprintf("model=%s/batch=%d", m.name, rows), func(b *testing.B) {
				raw, err := marshal()
				if err != nil {
					b.Fatal(err)
				}
				if opts.CUDA {
					defer ort.KeepGoSignalHandlers()()
				}
				s := orttest.Open(b, m.name, raw, opts)
				benchmarkRun(b, s, randomInput(m.input, rows, m.row))
			})
		}
	}
}

func randomInput(name string, rows int, row []int64) tensor.Tensor {
	shape := append([]int64{int64(rows)}, row...)
	n, _ := tensor.NumElements(shape)
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()
	}
	return tensor.Tensor{Name: name, DType: tensor.FP32, Shape: shape, Data: orttest.F32Bytes(x)}
}

func benchmarkRun(b *testing.B, s *ort.Session, x tensor.Tensor) {
	in := []tensor.Tensor{x}
	if _, err := s.Run(in, nil); err != nil { // warm up: first Run plans memory
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Run(in, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(x.Shape[0])*float64(b.N)/b.Elapsed().Seconds(), "infer/s")
}
