package tensor

import "fmt"

// DType is a tensor element type, named as KServe V2 / Triton name it.
// The zero value is Invalid.
type DType uint8

// The element types the pipeline carries. Bytes (V2's BYTES) carries
// encoded images in and classification strings out between a client and
// the prep stage, and a model's ONNX STRING inputs and outputs all the way
// to the infer worker (internal/ort copies them into ORT string tensors).
const (
	Invalid DType = iota
	Bool
	Uint8
	Uint16
	Uint32
	Uint64
	Int8
	Int16
	Int32
	Int64
	FP16
	FP32
	FP64
	BF16
	// Bytes is V2's BYTES: variable-length byte strings, serialised as
	// Triton does (see AppendBytesElement). Its Size is 0.
	Bytes
)

var dtypeNames = [...]string{
	Invalid: "INVALID",
	Bool:    "BOOL",
	Uint8:   "UINT8",
	Uint16:  "UINT16",
	Uint32:  "UINT32",
	Uint64:  "UINT64",
	Int8:    "INT8",
	Int16:   "INT16",
	Int32:   "INT32",
	Int64:   "INT64",
	FP16:    "FP16",
	FP32:    "FP32",
	FP64:    "FP64",
	BF16:    "BF16",
	Bytes:   "BYTES",
}

var dtypeSizes = [...]int{
	Bool: 1, Uint8: 1, Uint16: 2, Uint32: 4, Uint64: 8,
	Int8: 1, Int16: 2, Int32: 4, Int64: 8,
	FP16: 2, FP32: 4, FP64: 8, BF16: 2,
}

// String returns the V2 datatype name, e.g. "FP32".
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return "INVALID"
}

// Size is the number of bytes one element occupies; 0 for Invalid and for
// Bytes, whose elements vary in length.
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// IsInteger reports whether d is a signed or unsigned integer type.
func (d DType) IsInteger() bool { return d >= Uint8 && d <= Int64 }

// Valid reports whether d names a supported element type.
func (d DType) Valid() bool { return d > Invalid && d <= Bytes }

// ParseDType maps a V2 datatype name ("FP32", "INT64", ...) to a DType.
// It returns Invalid, false for unknown or unsupported names.
func ParseDType(name string) (DType, bool) {
	for i, n := range dtypeNames {
		if i != int(Invalid) && n == name {
			return DType(i), true
		}
	}
	return Invalid, false
}

// MarshalText writes the V2 name, so JSON carries "datatype": "FP32".
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a V2 name.
func (d *DType) UnmarshalText(b []byte) error {
	v, ok := ParseDType(string(b))
	if !ok {
		return fmt.Errorf("unsupported datatype %q", b)
	}
	*d = v
	return nil
}
