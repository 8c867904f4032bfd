package onnxmodel

import "github.com/supervisor-dev/supervisor/internal/tensor"

// Types exercises non-float datatypes end to end: inputs "ids" INT64
// [batch,4] and "mask" BOOL [batch,4]; outputs "masked" INT64 [batch,4] =
// Where(mask, ids, 0) and "inverted" BOOL [batch,4] = Not(mask).
func Types() *Model {
	g := NewGraph("types").
		Input("ids", tensor.Int64, Sym("batch"), D(4)).
		Input("mask", tensor.Bool, Sym("batch"), D(4)).
		Int64s("zero", nil, []int64{0}).
		Node("Where", []string{"mask", "ids", "zero"}, []string{"masked"}).
		Node("Not", []string{"mask"}, []string{"inverted"}).
		Output("masked", tensor.Int64, Sym("batch"), D(4)).
		Output("inverted", tensor.Bool, Sym("batch"), D(4))
	return g.Model()
}
