package tensor

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"
)

func sampleRequest() *Request {
	return &Request{
		Model:   "types",
		Outputs: []string{"masked", "inverted"},
		Inputs: []Tensor{
			{Name: "mask", DType: Bool, Shape: []int64{1, 3}, Data: []byte{1, 0, 1}},
			{Name: "ids", DType: Int64, Shape: []int64{1, 3}, Data: bytes.Repeat([]byte{7}, 24)},
			{Name: "x", DType: FP16, Shape: []int64{2}, Data: []byte{1, 2, 3, 4}},
			{Name: "empty", DType: FP32, Shape: []int64{0, 4}, Data: []byte{}},
		},
	}
}

func TestRequestRoundTrip(t *testing.T) {
	want := sampleRequest()
	frame := AppendRequest(nil, want)
	got, err := ParseRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != want.Model || len(got.Outputs) != 2 || got.Outputs[1] != "inverted" || len(got.Inputs) != len(want.Inputs) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i, w := range want.Inputs {
		g := got.Inputs[i]
		if g.Name != w.Name || g.DType != w.DType || FormatShape(g.Shape) != FormatShape(w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("input %d: got %+v, want %+v", i, g, w)
		}
	}
}

func TestTensorDataIsEightByteAlignedInTheFrame(t *testing.T) {
	frame := AppendRequest(make([]byte, 0, 1024), sampleRequest())
	got, err := ParseRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(&frame[0]))
	for _, in := range got.Inputs {
		if len(in.Data) == 0 {
			continue
		}
		if off := uintptr(unsafe.Pointer(&in.Data[0])) - base; off%8 != 0 {
			t.Errorf("%s: data at frame offset %d, not a multiple of 8", in.Name, off)
		}
	}
}

func TestParseRejectsEveryTruncation(t *testing.T) {
	frame := AppendRequest(nil, sampleRequest())
	for n := 0; n < len(frame); n++ {
		if _, err := ParseRequest(frame[:n]); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes parsed", n, len(frame))
		}
	}
}

func TestParseRejectsInconsistentTensors(t *testing.T) {
	bad := AppendTensors(nil, []Tensor{{Name: "x", DType: FP32, Shape: []int64{2, 2}, Data: make([]byte, 12)}})
	if _, err := ParseTensors(bad); !errors.Is(err, ErrWire) {
		t.Fatalf("12 bytes for a [2,2] FP32 tensor: err = %v, want ErrWire", err)
	}
	huge := AppendTensors(nil, []Tensor{{Name: "x", DType: FP32, Shape: []int64{1 << 40, 1 << 40}, Data: nil}})
	if _, err := ParseTensors(huge); !errors.Is(err, ErrWire) {
		t.Fatalf("huge shape: err = %v, want ErrWire", err)
	}
	if _, err := ParseTensors(append(AppendTensors(nil, nil), 0)); !errors.Is(err, ErrWire) {
		t.Fatalf("trailing byte: err = %v, want ErrWire", err)
	}
}

func TestSpecAcceptsNamesBothShapes(t *testing.T) {
	s := Spec{Name: "x", DType: FP32, Shape: []int64{-1, 16}}
	if err := s.Accepts([]int64{5, 16}); err != nil {
		t.Fatalf("[5,16] rejected: %v", err)
	}
	err := s.Accepts([]int64{2, 3})
	if err == nil || err.Error() != `input "x": shape [2,3] does not match the model's [-1,16]` {
		t.Fatalf("err = %v", err)
	}
	if s.Accepts([]int64{16}) == nil {
		t.Fatal("wrong rank accepted")
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add(AppendRequest(nil, sampleRequest()))
	f.Add([]byte{})
	f.Add(AppendRequest(nil, &Request{Model: "m"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b)
		if err != nil {
			return
		}
		for i := range r.Inputs {
			if err := r.Inputs[i].Check(); err != nil {
				t.Fatalf("accepted an inconsistent tensor: %v", err)
			}
		}
	})
}

// FuzzParseTensors: prep workers parse what infer workers answer; a
// damaged frame must be an error, never a panic or an inconsistent tensor.
func FuzzParseTensors(f *testing.F) {
	f.Add(AppendTensors(nil, sampleRequest().Inputs))
	f.Add([]byte{})
	f.Add(AppendTensors(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := ParseTensors(b)
		if err != nil {
			return
		}
		for i := range ts {
			if err := ts[i].Check(); err != nil {
				t.Fatalf("accepted an inconsistent tensor: %v", err)
			}
		}
	})
}
