package ort_test

import (
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestScalarInputsAndOutputs runs a model whose inputs and outputs are all
// rank 0 (shape []), which onnxruntime_go's tensors cannot carry.
func TestScalarInputsAndOutputs(t *testing.T) {
	s := openModel(t, "scalar", onnxmodel.Scalar())
	md := s.Metadata()
	for _, sp := range append(md.Inputs, md.Outputs...) {
		if len(sp.Shape) != 0 {
			t.Errorf("%s shape = %v, want [] (rank 0)", sp.Name, sp.Shape)
		}
	}
	out, err := s.Run([]tensor.Tensor{
		{Name: "x", DType: tensor.FP32, Shape: []int64{}, Data: orttest.F32Bytes([]float32{3.5})},
		{Name: "n", DType: tensor.Int64, Shape: []int64{}, Data: orttest.I64Bytes([]int64{41})},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || len(out[0].Shape) != 0 || len(out[1].Shape) != 0 {
		t.Fatalf("outputs %+v, want two scalars", out)
	}
	if got := orttest.F32s(out[0].Data); !reflect.DeepEqual(got, []float32{8}) {
		t.Errorf("y = %v, want [8]", got)
	}
	if got := orttest.I64s(out[1].Data); !reflect.DeepEqual(got, []int64{42}) {
		t.Errorf("m = %v, want [42]", got)
	}
}

// TestEmptyBatch runs the MLP on zero rows: inputs with a zero dimension
// (fixed [0] dimensions exist in real models) reach ONNX Runtime.
func TestEmptyBatch(t *testing.T) {
	s := openModel(t, "mlp", onnxmodel.MLP(1))
	out, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{0, onnxmodel.MLPIn}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || !reflect.DeepEqual(out[0].Shape, []int64{0, 4}) || len(out[0].Data) != 0 {
		t.Errorf("outputs %+v, want y of shape [0,4] and no data", out)
	}
}
