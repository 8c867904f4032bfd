package onnxmodel

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// DefaultClasses is the width of the default model's logits.
const DefaultClasses = 1000

// Default is the default model, shaped like an image classifier: input
// "input" FP32 [batch,3,224,224], output "logits" FP32 [batch,1000].
//
//	Conv3x3/2(3→48) Relu MaxPool2 → Conv3x3(48→96) Relu MaxPool2 →
//	Conv3x3(96→192) Relu MaxPool2 → Conv3x3(192→384) Relu →
//	GlobalAveragePool Flatten Gemm(384→1000)
//
// That is about 0.4 GMAC per image, sized so that one batch-1 inference takes
// about 4 ms on one CPU core (BenchmarkDefaultBatch1 in internal/ort): enough
// work for batching and scheduling to matter, little enough to keep tests
// fast. Weights are He-initialised from seed, so logits are finite and differ
// per input, though they mean nothing.
func Default(seed uint64) *Model {
	channels := [...]int{48, 96, 192, 384}
	r := newRand(seed)
	g := NewGraph("default").Input("input", tensor.FP32, Sym("batch"), D(3), D(224), D(224))
	x, in := "input", 3
	for i, out := range channels {
		w, b := fmt.Sprintf("conv%d.w", i), fmt.Sprintf("conv%d.b", i)
		g.Float32s(w, []int64{int64(out), int64(in), 3, 3}, heNormal(r, out*in*9, in*9))
		g.Float32s(b, []int64{int64(out)}, smallBias(r, out))
		stride := int64(1)
		if i == 0 {
			stride = 2
		}
		conv, relu := fmt.Sprintf("conv%d", i), fmt.Sprintf("relu%d", i)
		g.Node("Conv", []string{x, w, b}, []string{conv},
			AttrInts("kernel_shape", 3, 3), AttrInts("pads", 1, 1, 1, 1), AttrInts("strides", stride, stride))
		g.Node("Relu", []string{conv}, []string{relu})
		x, in = relu, out
		if i < len(channels)-1 {
			pool := fmt.Sprintf("pool%d", i)
			g.Node("MaxPool", []string{x}, []string{pool},
				AttrInts("kernel_shape", 2, 2), AttrInts("strides", 2, 2))
			x = pool
		}
	}
	g.Float32s("fc.w", []int64{DefaultClasses, int64(in)}, heNormal(r, DefaultClasses*in, in))
	g.Float32s("fc.b", []int64{DefaultClasses}, smallBias(r, DefaultClasses))
	g.Node("GlobalAveragePool", []string{x}, []string{"gap"})
	g.Node("Flatten", []string{"gap"}, []string{"features"}, AttrInt("axis", 1))
	g.Node("Gemm", []string{"features", "fc.w", "fc.b"}, []string{"logits"}, AttrInt("transB", 1))
	g.Output("logits", tensor.FP32, Sym("batch"), D(DefaultClasses))
	return g.Model()
}
