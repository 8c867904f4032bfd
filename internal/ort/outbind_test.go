package ort_test

import (
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// openBound opens m twice: as usual, and with its outputs bound to the CPU
// allocator through the path pinned outputs take.
func openBound(t *testing.T, name string, m *onnxmodel.Model) (plain, bound *ort.Session) {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	plain = orttest.Open(t, name, b, ort.Options{IntraOpThreads: 1})
	bound = orttest.Open(t, name, b, ort.Options{IntraOpThreads: 1, Outputs: ort.OutputsCPU})
	return plain, bound
}

// TestBoundOutputsMatch: every output read back from bound memory has the
// shape, datatype and bytes of the usual path's, for dynamic batch sizes
// (0 rows included), several dtypes, scalars and a model without inputs.
func TestBoundOutputsMatch(t *testing.T) {
	mlpIn := func(rows int) []tensor.Tensor { in, _ := mlpInput(rows, uint64(rows)); return []tensor.Tensor{in} }
	types := func(rows int) []tensor.Tensor {
		return []tensor.Tensor{
			{Name: "ids", DType: tensor.Int64, Shape: []int64{int64(rows), 4}, Data: make([]byte, rows*32)},
			{Name: "mask", DType: tensor.Bool, Shape: []int64{int64(rows), 4}, Data: make([]byte, rows*4)},
		}
	}
	scalar := []tensor.Tensor{
		{Name: "x", DType: tensor.FP32, Shape: []int64{}, Data: orttest.F32Bytes([]float32{2.5})},
		{Name: "n", DType: tensor.Int64, Shape: []int64{}, Data: make([]byte, 8)},
	}
	cases := []struct {
		name   string
		model  *onnxmodel.Model
		inputs [][]tensor.Tensor
	}{
		{"mlp", onnxmodel.MLP(1), [][]tensor.Tensor{mlpIn(1), mlpIn(3), mlpIn(8), mlpIn(0)}},
		{"types", onnxmodel.Types(), [][]tensor.Tensor{types(1), types(5)}},
		{"fp16", halfModel(onnxmodel.Sym("batch")), [][]tensor.Tensor{{{Name: "x", DType: tensor.FP16, Shape: []int64{2, 4}, Data: halves(fp16Values)}}}},
		{"scalar", onnxmodel.Scalar(), [][]tensor.Tensor{scalar}},
		{"constant", onnxmodel.Constant(), [][]tensor.Tensor{nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain, bound := openBound(t, c.name, c.model)
			for _, in := range c.inputs {
				want, err := plain.Run(in, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := bound.Run(in, nil)
				if err != nil {
					t.Fatalf("bound run: %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("bound outputs differ:\n got %+v\nwant %+v", got, want)
				}
			}
		})
	}
}
