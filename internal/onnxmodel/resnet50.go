package onnxmodel

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// ResNet50Params is the number of weights ResNet50 holds: torchvision's
// resnet50 (25,557,032 parameters) with each BatchNormalization folded into
// its convolution as a bias (one value per channel instead of two).
const ResNet50Params = 25_530_472

// ResNet50 is ResNet-50 (v1.5, torchvision's topology) with random weights:
// the graph and the FLOPs (about 4.1 GMAC per 224×224 image) of the image
// model GPU figures are usually quoted for, without shipping 100 MB of
// trained weights. Input "input" FP32 [batch,3,224,224], output "logits"
// FP32 [batch,1000], as the default model, so the same requests serve both.
//
//	Conv7x7/2(3→64) Relu MaxPool3x3/2 →
//	bottleneck blocks [3,4,6,3] of widths 64,128,256,512 (×4 out), the
//	first of each stage with a 1×1 projection shortcut, stride 2 on its
//	3×3 conv from the second stage on → GlobalAveragePool Flatten
//	Gemm(2048→1000)
//
// Each convolution carries a bias where the trained model has a
// BatchNormalization: inference folds one into the other, as ONNX Runtime
// does when it optimises the graph. Weights are He-initialised from seed;
// the last convolution of each residual branch is scaled by 0.2 so that
// sixteen residual additions keep activations far below FP16's range.
//
// With fp16 the weights are FP16 and the graph casts its input to FP16 and
// its logits back to FP32: the model computes in half precision (as
// deployments on tensor cores do) while clients send the same FP32 tensors.
func ResNet50(seed uint64, fp16 bool) *Model {
	name := "resnet50"
	if fp16 {
		name = "resnet50-fp16"
	}
	b := &resnetBuilder{g: NewGraph(name), r: newRand(seed), fp16: fp16}
	g := b.g.Input("input", tensor.FP32, Sym("batch"), D(3), D(224), D(224))
	x := "input"
	if fp16 {
		g.Node("Cast", []string{x}, []string{"input16"}, AttrInt("to", int64(elemType(tensor.FP16))))
		x = "input16"
	}
	x = b.relu(b.conv("conv1", x, 3, 64, 7, 2, 1))
	g.Node("MaxPool", []string{x}, []string{"pool1"},
		AttrInts("kernel_shape", 3, 3), AttrInts("pads", 1, 1, 1, 1), AttrInts("strides", 2, 2))
	x, in := "pool1", 64
	for stage, blocks := range [...]int{3, 4, 6, 3} {
		width := 64 << stage
		for blk := range blocks {
			stride := 1
			if blk == 0 && stage > 0 {
				stride = 2
			}
			p := fmt.Sprintf("layer%d.%d", stage+1, blk)
			h := b.relu(b.conv(p+".conv1", x, in, width, 1, 1, 1))
			h = b.relu(b.conv(p+".conv2", h, width, width, 3, stride, 1))
			h = b.conv(p+".conv3", h, width, 4*width, 1, 1, 0.2)
			short := x
			if blk == 0 {
				short = b.conv(p+".downsample", x, in, 4*width, 1, stride, 1)
			}
			g.Node("Add", []string{h, short}, []string{p + ".add"})
			x, in = b.relu(p+".add"), 4*width
		}
	}
	g.Node("GlobalAveragePool", []string{x}, []string{"gap"})
	g.Node("Flatten", []string{"gap"}, []string{"features"}, AttrInt("axis", 1))
	b.weights("fc.w", []int64{DefaultClasses, int64(in)}, heNormal(b.r, DefaultClasses*in, in))
	b.weights("fc.b", []int64{DefaultClasses}, smallBias(b.r, DefaultClasses))
	out := "logits"
	if fp16 {
		out = "logits16"
	}
	g.Node("Gemm", []string{"features", "fc.w", "fc.b"}, []string{out}, AttrInt("transB", 1))
	if fp16 {
		g.Node("Cast", []string{out}, []string{"logits"}, AttrInt("to", int64(elemType(tensor.FP32))))
	}
	g.Output("logits", tensor.FP32, Sym("batch"), D(DefaultClasses))
	return g.Model()
}

// resnetBuilder adds ResNet50's layers to g, drawing weights from r in
// the order the layers are added.
type resnetBuilder struct {
	g    *Graph
	r    *rand.Rand
	fp16 bool
}

// conv adds a k×k convolution with bias from x (in channels) to out
// channels, padded to keep the size at stride 1, its weights He-initialised
// and multiplied by scale; it returns the output's name.
func (b *resnetBuilder) conv(name, x string, in, out, k, stride int, scale float32) string {
	w := heNormal(b.r, out*in*k*k, in*k*k)
	for i := range w {
		w[i] *= scale
	}
	b.weights(name+".w", []int64{int64(out), int64(in), int64(k), int64(k)}, w)
	b.weights(name+".b", []int64{int64(out)}, smallBias(b.r, out))
	pad, s := int64(k/2), int64(stride)
	b.g.Node("Conv", []string{x, name + ".w", name + ".b"}, []string{name},
		AttrInts("kernel_shape", int64(k), int64(k)), AttrInts("pads", pad, pad, pad, pad), AttrInts("strides", s, s))
	return name
}

// relu adds a Relu of x and returns its output's name.
func (b *resnetBuilder) relu(x string) string {
	b.g.Node("Relu", []string{x}, []string{x + ".relu"})
	return x + ".relu"
}

// weights adds an initializer in the model's precision.
func (b *resnetBuilder) weights(name string, shape []int64, v []float32) {
	if !b.fp16 {
		b.g.Float32s(name, shape, v)
		return
	}
	raw := make([]byte, 0, 2*len(v))
	for _, f := range v {
		raw = binary.LittleEndian.AppendUint16(raw, tensor.FP16From32(f))
	}
	b.g.Initializer(name, tensor.FP16, shape, raw)
}
