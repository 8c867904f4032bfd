package onnxmodel

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// castToFloat is onnx TensorProto.DataType FLOAT, the "to" of a Cast.
const castToFloat = 1

// SlowSin runs as long as its input asks: input "n" INT64 [] (a scalar),
// output "y" FP32 [1] = ReduceSum(Sin^nodes(Cast(Range(0, n, 1)))). Each of
// its Sin nodes works on n floats, so a run costs about n*nodes sine
// evaluations: n 1 answers at once, n 1e7 with 400 nodes runs for many
// seconds on one core while holding only two n-float buffers. ONNX Runtime
// checks a run's terminate flag between nodes, and no node here takes
// long, so a run told to stop stops within one node: the model for tests
// of a bound on a run's duration (models[].max_run_time). Scalar input:
// serve it with batching off. Not written by WriteAll.
func SlowSin(nodes int) *Model {
	g := NewGraph("slow_sin").
		Input("n", tensor.Int64).
		Int64s("zero", nil, []int64{0}).
		Int64s("one", nil, []int64{1}).
		Node("Range", []string{"zero", "n", "one"}, []string{"r"}).
		Node("Cast", []string{"r"}, []string{"s0"}, AttrInt("to", castToFloat))
	prev := "s0"
	for i := 1; i <= nodes; i++ {
		next := fmt.Sprintf("s%d", i)
		g.Node("Sin", []string{prev}, []string{next})
		prev = next
	}
	g.Node("ReduceSum", []string{prev}, []string{"y"}, AttrInt("keepdims", 1)).
		Output("y", tensor.FP32, D(1))
	return g.Model()
}

// SquareMatMul is one node that runs as long as its input asks: input "n"
// INT64 [] (a scalar), output "y" FP32 [1,1] = ReduceSum(A·A) where A is
// an n×n matrix of zeros made in the graph (ConstantOfShape). Its MatMul,
// about 2n³ flops in one node, is where ONNX Runtime cannot stop a run
// told to terminate (it checks between nodes): n 5000 keeps one core busy
// for seconds on 100MB per matrix, for tests of what happens when a
// terminated run does not return. Scalar input: serve it with batching
// off. Not written by WriteAll.
func SquareMatMul() *Model {
	g := NewGraph("square_matmul").
		Input("n", tensor.Int64).
		Int64s("axis0", []int64{1}, []int64{0}).
		Node("Unsqueeze", []string{"n", "axis0"}, []string{"n1"}).
		Node("Concat", []string{"n1", "n1"}, []string{"shape"}, AttrInt("axis", 0)).
		Node("ConstantOfShape", []string{"shape"}, []string{"a"}).
		Node("MatMul", []string{"a", "a"}, []string{"aa"}).
		Node("ReduceSum", []string{"aa"}, []string{"y"}, AttrInt("keepdims", 1)).
		Output("y", tensor.FP32, D(1), D(1))
	return g.Model()
}
