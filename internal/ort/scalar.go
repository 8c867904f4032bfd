package ort

import (
	"fmt"
	"unsafe"

	onnxruntime "github.com/yalue/onnxruntime_go"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Rank-0 tensors (scalars, V2 shape []): onnxruntime_go v1.27.0's tensor
// constructors reject an empty shape (Shape.Validate), and an output ORT
// allocates with rank 0 cannot be turned into a Go value either. Its
// Scalar[T] type can do both: NewScalar builds a rank-0 OrtValue over a
// one-element Go slice, which ORT reads as an input and writes as a
// preallocated output. This file builds them from and reads them back into
// raw tensor bytes. FP16 and BF16 have no Go element type there, so
// scalars of those types are refused with an error naming the tensor.

// newScalar wraps the first element of data (little-endian, as tensors
// are laid out) as a rank-0 ORT value of dtype d. data may be shorter
// than one element only for an output, which ORT then fills.
func newScalar(d tensor.DType, data []byte) (onnxruntime.Value, error) {
	switch d {
	case tensor.FP32:
		return scalarOf[float32](data)
	case tensor.FP64:
		return scalarOf[float64](data)
	case tensor.Uint8:
		return scalarOf[uint8](data)
	case tensor.Int8:
		return scalarOf[int8](data)
	case tensor.Uint16:
		return scalarOf[uint16](data)
	case tensor.Int16:
		return scalarOf[int16](data)
	case tensor.Uint32:
		return scalarOf[uint32](data)
	case tensor.Int32:
		return scalarOf[int32](data)
	case tensor.Uint64:
		return scalarOf[uint64](data)
	case tensor.Int64:
		return scalarOf[int64](data)
	case tensor.Bool:
		return scalarOf[bool](data)
	}
	return nil, fmt.Errorf("%s scalars (rank 0) are not supported: onnxruntime_go v1.27.0 has no Go type for them", d)
}

func scalarOf[T onnxruntime.TensorData](data []byte) (onnxruntime.Value, error) {
	var v T
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)), data)
	s, err := onnxruntime.NewScalar(v)
	if err != nil {
		return nil, fmt.Errorf("could not create a scalar: %w", err)
	}
	return s, nil
}

// scalarBytes returns a rank-0 value's element as raw bytes; ok is false
// when v is not a Scalar.
func scalarBytes(v onnxruntime.Value) ([]byte, bool) {
	switch s := v.(type) {
	case *onnxruntime.Scalar[float32]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[float64]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[uint8]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[int8]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[uint16]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[int16]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[uint32]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[int32]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[uint64]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[int64]:
		return elementBytes(s.GetData()), true
	case *onnxruntime.Scalar[bool]:
		return elementBytes(s.GetData()), true
	}
	return nil, false
}

// elementBytes copies one element's bytes.
func elementBytes[T any](v T) []byte {
	b := make([]byte, unsafe.Sizeof(v))
	copy(b, unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)))
	return b
}
