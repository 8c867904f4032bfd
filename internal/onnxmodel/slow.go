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
	g.Node("ReduceSum", []string{sines(g, "s0", nodes)}, []string{"y"}, AttrInt("keepdims", 1)).
		Output("y", tensor.FP32, D(1))
	return g.Model()
}

// SlowSinRows is SlowSin for a batching model: input "n" INT64 [batch,1],
// output "y" FP32 [batch,1] = Cast(n) + 0·ReduceSum(Sin^nodes(Range(0,
// max(n), 1))). A run costs what the largest n of its batch asks, so one
// row of n 1e7 makes its whole batch's run long while n 1 answers at
// once: the model for tests of a run timeout that strikes every request
// of a batch (the poison quarantine's suspects). Not written by WriteAll.
func SlowSinRows(nodes int) *Model {
	g := NewGraph("slow_sin_rows").
		Input("n", tensor.Int64, Sym("batch"), D(1)).
		Float32s("zero", nil, []float32{0}).
		Float32s("one", nil, []float32{1}).
		Node("Cast", []string{"n"}, []string{"nf"}, AttrInt("to", castToFloat)).
		Node("ReduceMax", []string{"nf"}, []string{"most"}, AttrInt("keepdims", 0)).
		Node("Range", []string{"zero", "most", "one"}, []string{"s0"})
	g.Node("ReduceSum", []string{sines(g, "s0", nodes)}, []string{"sum"}, AttrInt("keepdims", 0)).
		Node("Mul", []string{"sum", "zero"}, []string{"nothing"}).
		Node("Add", []string{"nf", "nothing"}, []string{"y"}).
		Output("y", tensor.FP32, Sym("batch"), D(1))
	return g.Model()
}

// sines adds nodes Sin nodes to g, the first on from, and returns the
// last one's output.
func sines(g *Graph, from string, nodes int) string {
	prev := from
	for i := 1; i <= nodes; i++ {
		next := fmt.Sprintf("s%d", i)
		g.Node("Sin", []string{prev}, []string{next})
		prev = next
	}
	return prev
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

// SlowRows costs the same for every row: input "x" FP32 [batch,width],
// output "y" FP32 [batch,1] = ReduceSum over axis 1 of Sin^nodes(x). A run
// costs about rows*width*nodes sine evaluations on two rows*width-float
// buffers, so its warm-up grows with max_batch_size while batch size 1
// answers at once: the model for tests of warm-ups that do not fit
// boot_timeout. Not written by WriteAll.
func SlowRows(width, nodes int) *Model {
	g := NewGraph("slow_rows").
		Input("x", tensor.FP32, Sym("batch"), D(int64(width))).
		Int64s("axis1", []int64{1}, []int64{1})
	g.Node("ReduceSum", []string{sines(g, "x", nodes), "axis1"}, []string{"y"}, AttrInt("keepdims", 1)).
		Output("y", tensor.FP32, Sym("batch"), D(1))
	return g.Model()
}
