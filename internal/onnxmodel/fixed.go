package onnxmodel

import "github.com/supervisor-dev/supervisor/internal/tensor"

// Fixed has no dynamic dimension, so it cannot be batched: input "x" FP32
// [2,3], output "y" FP32 [2,3] = x*2 + 1.
func Fixed() *Model {
	g := NewGraph("fixed").
		Input("x", tensor.FP32, D(2), D(3)).
		Float32s("two", nil, []float32{2}).
		Float32s("one", nil, []float32{1}).
		Node("Mul", []string{"x", "two"}, []string{"x2"}).
		Node("Add", []string{"x2", "one"}, []string{"y"}).
		Output("y", tensor.FP32, D(2), D(3))
	return g.Model()
}
