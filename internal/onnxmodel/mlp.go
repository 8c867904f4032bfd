package onnxmodel

import "github.com/supervisor-dev/supervisor/internal/tensor"

// MLP sizes: x [batch,MLPIn] -> hidden [batch,MLPHidden] -> y [batch,MLPOut].
const (
	MLPIn     = 16
	MLPHidden = 32
	MLPOut    = 4
)

// MLPWeights are the parameters of the MLP model, row-major: W1 is
// [MLPIn,MLPHidden], W2 is [MLPHidden,MLPOut].
type MLPWeights struct {
	W1, B1, W2, B2 []float32
}

// NewMLPWeights draws the MLP's parameters from seed; MLP(seed) embeds
// exactly these, so tests can compute the expected output in Go.
func NewMLPWeights(seed uint64) MLPWeights {
	r := newRand(seed)
	return MLPWeights{
		W1: heNormal(r, MLPIn*MLPHidden, MLPIn),
		B1: smallBias(r, MLPHidden),
		W2: heNormal(r, MLPHidden*MLPOut, MLPHidden),
		B2: smallBias(r, MLPOut),
	}
}

// Forward computes y = relu(x·W1 + b1)·W2 + b2 for one row of x, in the same
// order of operations as the model, as the reference tests compare against.
func (w MLPWeights) Forward(x []float32) []float32 {
	h := make([]float32, MLPHidden)
	for j := range h {
		s := float32(0)
		for i := 0; i < MLPIn; i++ {
			s += x[i] * w.W1[i*MLPHidden+j]
		}
		h[j] = max(s+w.B1[j], 0)
	}
	y := make([]float32, MLPOut)
	for k := range y {
		s := float32(0)
		for j := 0; j < MLPHidden; j++ {
			s += h[j] * w.W2[j*MLPOut+k]
		}
		y[k] = s + w.B2[k]
	}
	return y
}

// MLP is a two-layer perceptron: input "x" FP32 [batch,16], output "y" FP32
// [batch,4], through MatMul, Add, Relu, MatMul, Add. Its batch axis is
// dynamic, so requests can be batched.
func MLP(seed uint64) *Model {
	w := NewMLPWeights(seed)
	g := NewGraph("mlp").
		Input("x", tensor.FP32, Sym("batch"), D(MLPIn)).
		Float32s("w1", []int64{MLPIn, MLPHidden}, w.W1).
		Float32s("b1", []int64{MLPHidden}, w.B1).
		Float32s("w2", []int64{MLPHidden, MLPOut}, w.W2).
		Float32s("b2", []int64{MLPOut}, w.B2).
		Node("MatMul", []string{"x", "w1"}, []string{"h0"}).
		Node("Add", []string{"h0", "b1"}, []string{"h1"}).
		Node("Relu", []string{"h1"}, []string{"h2"}).
		Node("MatMul", []string{"h2", "w2"}, []string{"y0"}).
		Node("Add", []string{"y0", "b2"}, []string{"y"}).
		Output("y", tensor.FP32, Sym("batch"), D(MLPOut))
	return g.Model()
}
