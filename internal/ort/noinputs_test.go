package ort_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestNoInputs runs a model with no inputs, which onnxruntime_go's Run
// cannot (noinputs.go): a fixed-shape output and a scalar.
func TestNoInputs(t *testing.T) {
	s := openModel(t, "constant", onnxmodel.Constant())
	out, err := s.Run(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || !reflect.DeepEqual(out[0].Shape, []int64{2, 3}) || len(out[1].Shape) != 0 {
		t.Fatalf("outputs %+v, want c [2,3] and s []", out)
	}
	if got := orttest.F32s(out[0].Data); !reflect.DeepEqual(got, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("c = %v, want 1..6", got)
	}
	if got := orttest.F32s(out[1].Data); !reflect.DeepEqual(got, []float32{2.5}) {
		t.Errorf("s = %v, want [2.5]", got)
	}
	if _, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{1}, Data: make([]byte, 4)}}, nil); !errors.Is(err, ort.ErrBadInput) {
		t.Errorf("an input to a model without inputs: %v, want ErrBadInput", err)
	}
}
