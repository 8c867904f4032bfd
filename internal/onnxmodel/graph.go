package onnxmodel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Dim is one dimension of a graph input or output: a fixed Size, or, when
// Param is not empty, a symbolic dimension (onnx dim_param) that ONNX Runtime
// reports as -1 and accepts at any size. Inputs and outputs sharing a Param
// have the same size at run time, which is how a batch axis is declared.
type Dim struct {
	Size  int64
	Param string
}

// D is a fixed dimension of size n.
func D(n int64) Dim { return Dim{Size: n} }

// Sym is a symbolic dimension named param, e.g. Sym("batch").
func Sym(param string) Dim { return Dim{Param: param} }

// valueInfo is a graph input or output (onnx ValueInfoProto).
type valueInfo struct {
	name  string
	dtype tensor.DType
	dims  []Dim
}

// initializer is a constant tensor stored in the graph (onnx TensorProto).
type initializer struct {
	name  string
	dtype tensor.DType
	shape []int64
	raw   []byte
}

// node is one operator application (onnx NodeProto).
type node struct {
	op      string
	name    string
	inputs  []string
	outputs []string
	attrs   []Attr
}

// Graph collects the parts of an ONNX graph in the order they are added;
// that order is the order they are encoded in, which keeps Marshal
// deterministic. Methods return the Graph so calls can be chained.
type Graph struct {
	name    string
	inputs  []valueInfo
	outputs []valueInfo
	inits   []initializer
	nodes   []node
}

// NewGraph starts an empty graph called name.
func NewGraph(name string) *Graph { return &Graph{name: name} }

// Input declares a graph input.
func (g *Graph) Input(name string, dtype tensor.DType, dims ...Dim) *Graph {
	g.inputs = append(g.inputs, valueInfo{name, dtype, dims})
	return g
}

// Output declares a graph output. Its name must be produced by a node.
func (g *Graph) Output(name string, dtype tensor.DType, dims ...Dim) *Graph {
	g.outputs = append(g.outputs, valueInfo{name, dtype, dims})
	return g
}

// Initializer adds a constant tensor from raw little-endian bytes. An empty
// shape is a scalar.
func (g *Graph) Initializer(name string, dtype tensor.DType, shape []int64, raw []byte) *Graph {
	g.inits = append(g.inits, initializer{name, dtype, shape, raw})
	return g
}

// Float32s adds an FP32 initializer.
func (g *Graph) Float32s(name string, shape []int64, v []float32) *Graph {
	raw := make([]byte, 0, 4*len(v))
	for _, f := range v {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
	}
	return g.Initializer(name, tensor.FP32, shape, raw)
}

// Int64s adds an INT64 initializer.
func (g *Graph) Int64s(name string, shape []int64, v []int64) *Graph {
	raw := make([]byte, 0, 8*len(v))
	for _, n := range v {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(n))
	}
	return g.Initializer(name, tensor.Int64, shape, raw)
}

// Weights is the number of values the graph's initializers hold: a
// model's parameter count.
func (g *Graph) Weights() int64 {
	var n int64
	for _, t := range g.inits {
		size := int64(1)
		for _, d := range t.shape {
			size *= d
		}
		n += size
	}
	return n
}

// Node applies the operator op (default ONNX domain) to inputs, producing
// outputs. Nodes must be added in topological order, as ONNX requires.
func (g *Graph) Node(op string, inputs, outputs []string, attrs ...Attr) *Graph {
	name := fmt.Sprintf("%s_%d", op, len(g.nodes))
	g.nodes = append(g.nodes, node{op, name, inputs, outputs, attrs})
	return g
}

// Model wraps the graph in a model with this package's IR version and
// opset.
func (g *Graph) Model() *Model {
	return &Model{Graph: g, IRVersion: IRVersion, Opset: Opset}
}
