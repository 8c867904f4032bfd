package ort_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func serialise(elems ...string) []byte {
	var b []byte
	for _, e := range elems {
		b = tensor.AppendBytesElement(b, []byte(e))
	}
	return b
}

// TestStringTensors runs a string identity model: STRING inputs and
// outputs are reported as BYTES and cross ORT in Triton's serialisation,
// empty and non-ASCII elements included.
func TestStringTensors(t *testing.T) {
	s := openModel(t, "strings", onnxmodel.Strings())
	md := s.Metadata()
	if md.Inputs[0].DType != tensor.Bytes || md.Outputs[0].DType != tensor.Bytes {
		t.Fatalf("metadata %+v, want BYTES input and output", md)
	}
	in := serialise("héllo", "", "monday", "x")
	out, err := s.Run([]tensor.Tensor{{Name: "text", DType: tensor.Bytes, Shape: []int64{2, 2}, Data: in}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].DType != tensor.Bytes || !reflect.DeepEqual(out[0].Shape, []int64{2, 2}) || string(out[0].Data) != string(in) {
		t.Errorf("outputs %+v, want the input back", out)
	}
	out, err = s.Run([]tensor.Tensor{{Name: "text", DType: tensor.Bytes, Shape: []int64{0, 2}, Data: []byte{}}}, nil)
	if err != nil || len(out) != 1 || len(out[0].Data) != 0 {
		t.Errorf("empty batch: outputs %+v, err %v, want one output with no data", out, err)
	}
}

// TestStringInputRefused: a lying length prefix and an element ORT would
// cut at a NUL byte are the client's errors, never a crash.
func TestStringInputRefused(t *testing.T) {
	s := openModel(t, "strings", onnxmodel.Strings())
	lying := serialise("ab", "cd")
	lying[0] = 200
	for name, data := range map[string][]byte{
		"lying prefix": lying,
		"short":        serialise("ab"),
		"NUL byte":     serialise("a\x00b", "c"),
	} {
		_, err := s.Run([]tensor.Tensor{{Name: "text", DType: tensor.Bytes, Shape: []int64{1, 2}, Data: data}}, nil)
		if !errors.Is(err, ort.ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", name, err)
		}
	}
}
