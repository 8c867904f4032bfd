package tensor

import (
	"fmt"
	"strconv"
	"strings"
)

// Tensor is one named tensor with its data as raw little-endian bytes in
// row-major order. len(Data) == NumElements(Shape) * DType.Size() for a
// well-formed tensor, except Bytes tensors, whose Data holds NumElements
// length-prefixed elements (see AppendBytesElement); Check verifies it.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
}

// Check reports whether the data length matches the shape and dtype.
func (t *Tensor) Check() error {
	if !t.DType.Valid() {
		return fmt.Errorf("tensor %q: invalid datatype", t.Name)
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if t.DType == Bytes {
		if err := CheckBytesElements(t.Data, n); err != nil {
			return fmt.Errorf("tensor %q: shape %s of BYTES: %w", t.Name, FormatShape(t.Shape), err)
		}
		return nil
	}
	if want := n * int64(t.DType.Size()); int64(len(t.Data)) != want {
		return fmt.Errorf("tensor %q: shape %s of %s needs %d bytes, got %d",
			t.Name, FormatShape(t.Shape), t.DType, want, len(t.Data))
	}
	return nil
}

// maxElements bounds NumElements so that a hostile shape cannot overflow the
// byte-size computation.
const maxElements = 1 << 40

// NumElements is the product of the dimensions of a concrete shape. A
// negative dimension or a product beyond 2^40 is an error.
func NumElements(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %s has a negative dimension", FormatShape(shape))
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("shape %s is too large", FormatShape(shape))
		}
		n *= d
	}
	return n, nil
}

// FormatShape renders a shape the way error messages quote it: [-1,3,224,224].
func FormatShape(shape []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range shape {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	return b.String()
}
