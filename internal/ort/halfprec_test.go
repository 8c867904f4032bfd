package ort_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// fp16 holds IEEE half-precision bit patterns of exactly representable
// values; doubling one adds 1 to its exponent, i.e. 0x0400 to its bits.
var fp16Values = []uint16{
	0x3C00, // 1
	0xC000, // -2
	0x3E00, // 1.5
	0x3800, // 0.5
	0x4200, // 3
	0xC400, // -4
	0x3555, // ~0.333
	0x5640, // 100
}

func halves(v []uint16) []byte {
	b := make([]byte, 0, 2*len(v))
	for _, h := range v {
		b = binary.LittleEndian.AppendUint16(b, h)
	}
	return b
}

// halfModel doubles an FP16 input ("y" = x+x, kept FP16) and also returns it
// cast to FP32 ("z"), so one Run mixes preallocated and ORT-allocated
// outputs.
func halfModel(batch onnxmodel.Dim) *onnxmodel.Model {
	return onnxmodel.NewGraph("half").
		Input("x", tensor.FP16, batch, onnxmodel.D(4)).
		Node("Add", []string{"x", "x"}, []string{"y"}).
		Node("Cast", []string{"x"}, []string{"z"}, onnxmodel.AttrInt("to", 1)).
		Output("y", tensor.FP16, batch, onnxmodel.D(4)).
		Output("z", tensor.FP32, batch, onnxmodel.D(4)).Model()
}

func TestFP16Outputs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		batch   onnxmodel.Dim
		batches []int
	}{
		{"dynamic", onnxmodel.Sym("batch"), []int{1, 2}},
		{"static", onnxmodel.D(2), []int{2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openModel(t, "half", halfModel(tt.batch))
			for _, batch := range tt.batches {
				x := fp16Values[:4*batch]
				want := make([]uint16, len(x))
				for i, h := range x {
					want[i] = h + 0x0400
				}
				shape := []int64{int64(batch), 4}
				out, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP16, Shape: shape, Data: halves(x)}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				y := out[0]
				if y.Name != "y" || y.DType != tensor.FP16 || !reflect.DeepEqual(y.Shape, shape) || !bytes.Equal(y.Data, halves(want)) {
					t.Errorf("batch %d: y = %s %s %v % x, want FP16 %v % x", batch, y.Name, y.DType, y.Shape, y.Data, shape, halves(want))
				}
				if got := orttest.F32s(out[1].Data); got[0] != 1 || got[1] != -2 || got[2] != 1.5 {
					t.Errorf("batch %d: z starts %v, want [1 -2 1.5 ...]", batch, got)
				}
			}
		})
	}
}

func TestBF16Output(t *testing.T) {
	m := onnxmodel.NewGraph("bf16").
		Input("x", tensor.BF16, onnxmodel.Sym("n"), onnxmodel.D(2)).
		Node("Identity", []string{"x"}, []string{"y"}).
		Output("y", tensor.BF16, onnxmodel.Sym("n"), onnxmodel.D(2)).Model()
	s := openModel(t, "bf16", m)
	x := halves([]uint16{0x3F80, 0xC000, 0x4049, 0x0001, 0x7F80, 0x1234}) // 1, -2, ~3.14, tiny, +Inf, ...
	out, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.BF16, Shape: []int64{3, 2}, Data: x}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out[0].Data, x) || out[0].DType != tensor.BF16 {
		t.Errorf("Identity gave %s % x, want BF16 % x", out[0].DType, out[0].Data, x)
	}
}

func TestOpenRejectsUnsizableFP16Output(t *testing.T) {
	// "n" names no input dimension, so y's size is unknown until ORT runs.
	m := onnxmodel.NewGraph("unsizable").
		Input("x", tensor.FP16, onnxmodel.Sym("batch"), onnxmodel.D(4)).
		Node("Identity", []string{"x"}, []string{"y"}).
		Output("y", tensor.FP16, onnxmodel.Sym("n"), onnxmodel.D(4)).Model()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	orttest.Init(t)
	path := t.TempDir() + "/unsizable.onnx"
	if err := writeFile(path, b); err != nil {
		t.Fatal(err)
	}
	if _, err := ort.Open(path, "unsizable", ort.Options{}); err == nil || !strings.Contains(err.Error(), `output "y"`) {
		t.Errorf("Open: err = %v, want one naming output \"y\"", err)
	}
}

// TestOpenRejectsUnsupportedInput: a FLOAT8E4M3FN input (a type ONNX
// Runtime runs and V2 has no datatype for) makes Open fail naming it.
func TestOpenRejectsUnsupportedInput(t *testing.T) {
	m := onnxmodel.NewGraph("float8").
		Input("s", tensor.Bool, onnxmodel.D(2)).
		Node("Identity", []string{"s"}, []string{"o"}).
		Output("o", tensor.Bool, onnxmodel.D(2)).Model()
	m.IRVersion, m.Opset = 10, 19 // float8 types came with IR 9 and Identity-19; not 9, whose bytes the patch below would hit
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The builder has no FLOAT8E4M3FN datatype, so patch
	// TypeProto.Tensor.elem_type BOOL (field 1 = 9) to FLOAT8E4M3FN (17)
	// where it precedes the shape (field 2).
	b = bytes.ReplaceAll(b, []byte{0x08, 0x09, 0x12}, []byte{0x08, 0x11, 0x12})
	orttest.Init(t)
	path := t.TempDir() + "/float8.onnx"
	if err := writeFile(path, b); err != nil {
		t.Fatal(err)
	}
	if _, err := ort.Open(path, "float8", ort.Options{}); err == nil || !strings.Contains(err.Error(), `input "s"`) {
		t.Errorf("Open: err = %v, want one naming input \"s\"", err)
	}
}
