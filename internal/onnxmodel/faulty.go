package onnxmodel

import "github.com/supervisor-dev/supervisor/internal/tensor"

// ModByZero is a model that kills any process running it: input "x" INT64
// [batch,4], output "y" INT64 [batch,4] = Mod(x, x-x). The divisor is
// computed inside the graph, so no choice of inputs avoids it, and ONNX
// Runtime's integer Mod divides by zero in C++: SIGFPE. Tests use it to
// show that one such model cannot keep a server from serving the others.
// Not written by WriteAll.
func ModByZero() *Model {
	g := NewGraph("mod_by_zero").
		Input("x", tensor.Int64, Sym("batch"), D(4)).
		Node("Sub", []string{"x", "x"}, []string{"zero"}).
		Node("Mod", []string{"x", "zero"}, []string{"y"}).
		Output("y", tensor.Int64, Sym("batch"), D(4))
	return g.Model()
}

// ModByXMinus3 kills the process running it on one input only: input "x"
// INT64 [batch,4], output "y" INT64 [batch,4] = Mod(x, x-3). An element
// equal to 3 makes ONNX Runtime's integer Mod divide by zero (SIGFPE);
// every other input is served. The divisor is computed in the graph, so
// the infer worker's check of divisor inputs cannot see it: a poison
// request, for the master's quarantine tests. Its default warm-up (ones)
// is safe. Not written by WriteAll.
func ModByXMinus3() *Model {
	g := NewGraph("mod_by_x_minus_3").
		Input("x", tensor.Int64, Sym("batch"), D(4)).
		Int64s("three", nil, []int64{3}).
		Node("Sub", []string{"x", "three"}, []string{"d"}).
		Node("Mod", []string{"x", "d"}, []string{"y"}).
		Output("y", tensor.Int64, Sym("batch"), D(4))
	return g.Model()
}

// ModByInput divides by its second input: inputs "x" and "d" INT64
// [batch,4], output "y" INT64 [batch,4] = Mod(x, d). A zero warm-up would
// SIGFPE; the infer worker's default warm-up sees the Mod and fills integer
// inputs with ones. Not written by WriteAll.
func ModByInput() *Model {
	g := NewGraph("mod_by_input").
		Input("x", tensor.Int64, Sym("batch"), D(4)).
		Input("d", tensor.Int64, Sym("batch"), D(4)).
		Node("Mod", []string{"x", "d"}, []string{"y"}).
		Output("y", tensor.Int64, Sym("batch"), D(4))
	return g.Model()
}

// Scalar has rank-0 (shape []) inputs and outputs, which KServe V2 allows:
// inputs "x" FP32 [] and "n" INT64 [], outputs "y" FP32 [] = 2x + 1 and "m"
// INT64 [] = n + 1. Not written by WriteAll.
func Scalar() *Model {
	g := NewGraph("scalar").
		Input("x", tensor.FP32).
		Input("n", tensor.Int64).
		Float32s("two", nil, []float32{2}).
		Float32s("one", nil, []float32{1}).
		Int64s("inc", nil, []int64{1}).
		Node("Mul", []string{"x", "two"}, []string{"x2"}).
		Node("Add", []string{"x2", "one"}, []string{"y"}).
		Node("Add", []string{"n", "inc"}, []string{"m"}).
		Output("y", tensor.FP32).
		Output("m", tensor.Int64)
	return g.Model()
}

// Strings has string (V2 BYTES) inputs and outputs: input "text" STRING
// [batch,2], output "same" STRING [batch,2] = Identity(text). Not written
// by WriteAll.
func Strings() *Model {
	g := NewGraph("strings").
		Input("text", tensor.Bytes, Sym("batch"), D(2)).
		Node("Identity", []string{"text"}, []string{"same"}).
		Output("same", tensor.Bytes, Sym("batch"), D(2))
	return g.Model()
}

// Constant has no inputs: outputs "c" FP32 [2,3] = [1..6] (an initializer
// passed through Identity) and "s" FP32 [] = 2.5 (a Constant node). Not
// written by WriteAll.
func Constant() *Model {
	g := NewGraph("constant").
		Float32s("six", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}).
		Node("Identity", []string{"six"}, []string{"c"}).
		Node("Constant", nil, []string{"s"}, AttrFloat("value_float", 2.5)).
		Output("c", tensor.FP32, D(2), D(3)).
		Output("s", tensor.FP32)
	return g.Model()
}
