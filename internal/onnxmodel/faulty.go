package onnxmodel

import (
	"math"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Integer division traps on x86 (SIGFPE) where the quotient does not fit:
// the type's minimum divided by -1. ONNX Runtime 1.29 checks its integer
// Div and Mod for a zero divisor (a clean "Integer division by zero"
// error; 1.24 divided and died) but not for that pair, so the models below
// compute it inside the graph to kill the process that runs them.

// ModByZero is a model that kills any process running it: input "x" INT64
// [batch,4], output "y" INT64 [batch,4] = Mod((x-x) + MinInt64, -1). The
// operands are computed inside the graph from the input, so no choice of
// inputs avoids them and no constant folding runs them at load: ONNX
// Runtime's integer Mod divides MinInt64 by -1 in C++, SIGFPE. Tests use it
// to show that one such model cannot keep a server from serving the
// others. Not written by WriteAll.
func ModByZero() *Model {
	g := NewGraph("mod_by_zero").
		Input("x", tensor.Int64, Sym("batch"), D(4)).
		Int64s("min", nil, []int64{math.MinInt64}).
		Int64s("minus_one", nil, []int64{-1}).
		Node("Sub", []string{"x", "x"}, []string{"zero"}).
		Node("Add", []string{"zero", "min"}, []string{"dividend"}).
		Node("Mod", []string{"dividend", "minus_one"}, []string{"y"}).
		Output("y", tensor.Int64, Sym("batch"), D(4))
	return g.Model()
}

// ModByXMinus3 kills the process running it on one input only: input "x"
// INT64 [batch,4], output "y" INT64 [batch,4] = Mod(x, x-3), except that an
// element equal to 3 (a zero divisor, which ONNX Runtime 1.29 refuses
// cleanly) becomes Mod(MinInt64, -1), which traps: SIGFPE. Every other
// input is served. The divisor is computed in the graph, so the infer
// worker's check of divisor inputs cannot see it: a poison request, for
// the master's quarantine tests. Its default warm-up (ones) is safe. Not
// written by WriteAll.
func ModByXMinus3() *Model {
	g := NewGraph("mod_by_x_minus_3").
		Input("x", tensor.Int64, Sym("batch"), D(4)).
		Int64s("three", nil, []int64{3}).
		Int64s("zero", nil, []int64{0}).
		Int64s("min", nil, []int64{math.MinInt64}).
		Int64s("minus_one", nil, []int64{-1}).
		Node("Sub", []string{"x", "three"}, []string{"d"}).
		Node("Equal", []string{"d", "zero"}, []string{"is3"}).
		Node("Where", []string{"is3", "min", "x"}, []string{"dividend"}).
		Node("Where", []string{"is3", "minus_one", "d"}, []string{"divisor"}).
		Node("Mod", []string{"dividend", "divisor"}, []string{"y"}).
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

// ReshapeByInput is a valid model that zeros are not valid inputs of:
// input "x" FP32 [4], input "shape" INT64 [2], output "y" FP32 [a,b] =
// Reshape(x, shape). A shape of [0,0] (the zero warm-up) asks to copy a
// second dimension x lacks, which ONNX Runtime refuses; [2,2] is served.
// As the ONNX node tests test_reshape_*, test_expand_*, test_range_*: the
// model must serve whatever its warm-up met. Not written by WriteAll.
func ReshapeByInput() *Model {
	g := NewGraph("reshape_by_input").
		Input("x", tensor.FP32, D(4)).
		Input("shape", tensor.Int64, D(2)).
		Node("Reshape", []string{"x", "shape"}, []string{"y"}).
		Output("y", tensor.FP32, Sym("a"), Sym("b"))
	return g.Model()
}
