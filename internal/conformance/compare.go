package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// The ONNX backend tests' default tolerance: |got - want| <= atol + rtol*|want|.
const (
	rtol = 1e-3
	atol = 1e-7
)

// Compare checks got against want: datatype, shape, then every element
// (floats within the tolerance, NaN equal to NaN; the rest exactly). The
// error says where they first differ.
func Compare(got, want tensor.Tensor) error {
	if got.DType != want.DType {
		return fmt.Errorf("output %q: datatype %s, want %s", want.Name, got.DType, want.DType)
	}
	if !slices.Equal(got.Shape, want.Shape) && !(len(got.Shape) == 0 && len(want.Shape) == 0) {
		return fmt.Errorf("output %q: shape %s, want %s", want.Name, tensor.FormatShape(got.Shape), tensor.FormatShape(want.Shape))
	}
	if want.DType == tensor.Bytes {
		return compareStrings(got, want)
	}
	if len(got.Data) != len(want.Data) {
		return fmt.Errorf("output %q: %d bytes, want %d", want.Name, len(got.Data), len(want.Data))
	}
	float := floatReader(want.DType)
	if float == nil {
		if i := firstDiff(got.Data, want.Data); i >= 0 {
			return fmt.Errorf("output %q: differs at byte %d", want.Name, i)
		}
		return nil
	}
	size := want.DType.Size()
	for i := 0; i < len(want.Data); i += size {
		g, w := float(got.Data[i:]), float(want.Data[i:])
		if math.IsNaN(w) && math.IsNaN(g) || g == w {
			continue
		}
		if math.IsNaN(g) || math.IsNaN(w) || math.Abs(g-w) > atol+rtol*math.Abs(w) {
			return fmt.Errorf("output %q: element %d is %g, want %g", want.Name, i/size, g, w)
		}
	}
	return nil
}

// floatReader reads one element of a floating-point type as float64; nil
// for other types.
func floatReader(d tensor.DType) func([]byte) float64 {
	switch d {
	case tensor.FP32:
		return func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }
	case tensor.FP64:
		return func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }
	case tensor.FP16:
		return func(b []byte) float64 { return float64(tensor.FP16To32(binary.LittleEndian.Uint16(b))) }
	case tensor.BF16:
		return func(b []byte) float64 { return float64(tensor.BF16To32(binary.LittleEndian.Uint16(b))) }
	}
	return nil
}

// compareStrings compares BYTES tensors element by element, exactly.
func compareStrings(got, want tensor.Tensor) error {
	n, err := tensor.NumElements(want.Shape)
	if err != nil {
		return err
	}
	g, err := tensor.BytesElements(got.Data, n)
	if err != nil {
		return fmt.Errorf("output %q: %w", want.Name, err)
	}
	w, err := tensor.BytesElements(want.Data, n)
	if err != nil {
		return fmt.Errorf("output %q (expected): %w", want.Name, err)
	}
	for i := range w {
		if !bytes.Equal(g[i], w[i]) {
			return fmt.Errorf("output %q: element %d is %q, want %q", want.Name, i, g[i], w[i])
		}
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
