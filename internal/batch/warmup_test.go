package batch

import (
	"bytes"
	"slices"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestWarmupInputsKeepFixedZeroDims: a dimension the model fixes at 0 is
// warmed at 0 (the model's own shape check would refuse 1), dynamic ones
// at 1.
func TestWarmupInputsKeepFixedZeroDims(t *testing.T) {
	specs := []tensor.Spec{{Name: "x", DType: tensor.FP32, Shape: []int64{-1, 0, 3}}}
	in, err := WarmupInputs(specs, 1, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in[0].Shape, []int64{1, 0, 3}) || len(in[0].Data) != 0 {
		t.Errorf("shape %v with %d bytes, want [1,0,3] and no data", in[0].Shape, len(in[0].Data))
	}
	if err := specs[0].Accepts(in[0].Shape); err != nil {
		t.Errorf("the model refuses its own warm-up: %v", err)
	}
}

// TestWarmupInputsScalar: a rank-0 input is one element.
func TestWarmupInputsScalar(t *testing.T) {
	in, err := WarmupInputs([]tensor.Spec{{Name: "s", DType: tensor.Int64, Shape: []int64{}}}, 1, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(in[0].Shape) != 0 || !bytes.Equal(in[0].Data, []byte{1, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("scalar warm-up %v %v, want shape [] holding int64 1", in[0].Shape, in[0].Data)
	}
}

// TestWarmupInputsIntegerOnes: with intOnes, integer inputs hold 1 in
// every element (a divisor that cannot be zero) and the others stay zero.
func TestWarmupInputsIntegerOnes(t *testing.T) {
	specs := []tensor.Spec{
		{Name: "i32", DType: tensor.Int32, Shape: []int64{-1, 2}},
		{Name: "u8", DType: tensor.Uint8, Shape: []int64{2}},
		{Name: "f", DType: tensor.FP32, Shape: []int64{2}},
	}
	in, err := WarmupInputs(specs, 3, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in[0].Shape, []int64{1, 2}) || !bytes.Equal(in[0].Data, bytes.Repeat([]byte{1, 0, 0, 0}, 2)) {
		t.Errorf("i32 = %v %v, want [1,2] of ones", in[0].Shape, in[0].Data)
	}
	if !bytes.Equal(in[1].Data, []byte{1, 1}) {
		t.Errorf("u8 = %v, want ones", in[1].Data)
	}
	if !bytes.Equal(in[2].Data, make([]byte, 8)) {
		t.Errorf("f = %v, want zeros", in[2].Data)
	}
}

// TestWarmupInputsBytesAreEmptyStrings: a BYTES input warms with every
// element the empty string, serialized as a zero 4-byte length prefix
// each, which is exactly Triton's zero_data for TYPE_STRING (its
// GenerateWarmupData sizes a string input at 4 bytes an element from a
// zeroed buffer, and uses that buffer for random_data too), so a model
// warmed by Triton and by us sees the same strings. With intOnes it stays
// empty strings: ones would be 1-byte lengths with no byte after them.
func TestWarmupInputsBytesAreEmptyStrings(t *testing.T) {
	specs := []tensor.Spec{{Name: "text", DType: tensor.Bytes, Shape: []int64{-1, 2}}}
	for _, intOnes := range []bool{false, true} {
		in, err := WarmupInputs(specs, 3, true, intOnes)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(in[0].Shape, []int64{3, 2}) || !bytes.Equal(in[0].Data, make([]byte, 6*4)) {
			t.Fatalf("intOnes %v: shape %v data %v, want [3 2] and 24 zero bytes", intOnes, in[0].Shape, in[0].Data)
		}
		elems, err := tensor.BytesElements(in[0].Data, 6)
		if err != nil {
			t.Fatalf("intOnes %v: the warm-up's BYTES data does not parse: %v", intOnes, err)
		}
		for i, e := range elems {
			if len(e) != 0 {
				t.Errorf("intOnes %v: element %d is %q, want the empty string", intOnes, i, e)
			}
		}
	}
}

// TestWarmupSizes: 1 and the max always, the powers of two between, the
// preferred sizes, sorted and each once; batching off is one run.
func TestWarmupSizes(t *testing.T) {
	for _, c := range []struct {
		max       int
		preferred []int
		want      []int
	}{
		{0, nil, []int{1}},
		{1, nil, []int{1}},
		{4, []int{4}, []int{1, 2, 4}},
		{6, []int{3}, []int{1, 2, 3, 4, 6}},
		{65536, nil, []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}},
	} {
		if got := WarmupSizes(c.max, c.preferred); !slices.Equal(got, c.want) {
			t.Errorf("WarmupSizes(%d, %v) = %v, want %v", c.max, c.preferred, got, c.want)
		}
	}
}
