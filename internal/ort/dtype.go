package ort

import (
	"fmt"
	"unsafe"

	onnxruntime "github.com/yalue/onnxruntime_go"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// dtypeOf maps an ORT element type to the pipeline's DType; false for types
// the pipeline does not carry (complex, 8-bit and 4-bit floats...). STRING
// is BYTES (strings.go).
func dtypeOf(t onnxruntime.TensorElementDataType) (tensor.DType, bool) {
	switch t {
	case onnxruntime.TensorElementDataTypeFloat:
		return tensor.FP32, true
	case onnxruntime.TensorElementDataTypeUint8:
		return tensor.Uint8, true
	case onnxruntime.TensorElementDataTypeInt8:
		return tensor.Int8, true
	case onnxruntime.TensorElementDataTypeUint16:
		return tensor.Uint16, true
	case onnxruntime.TensorElementDataTypeInt16:
		return tensor.Int16, true
	case onnxruntime.TensorElementDataTypeInt32:
		return tensor.Int32, true
	case onnxruntime.TensorElementDataTypeInt64:
		return tensor.Int64, true
	case onnxruntime.TensorElementDataTypeBool:
		return tensor.Bool, true
	case onnxruntime.TensorElementDataTypeFloat16:
		return tensor.FP16, true
	case onnxruntime.TensorElementDataTypeDouble:
		return tensor.FP64, true
	case onnxruntime.TensorElementDataTypeUint32:
		return tensor.Uint32, true
	case onnxruntime.TensorElementDataTypeUint64:
		return tensor.Uint64, true
	case onnxruntime.TensorElementDataTypeBFloat16:
		return tensor.BF16, true
	case onnxruntime.TensorElementDataTypeString:
		return tensor.Bytes, true
	}
	return tensor.Invalid, false
}

// elemTypeOf is the inverse of dtypeOf.
func elemTypeOf(d tensor.DType) onnxruntime.TensorElementDataType {
	switch d {
	case tensor.FP32:
		return onnxruntime.TensorElementDataTypeFloat
	case tensor.Uint8:
		return onnxruntime.TensorElementDataTypeUint8
	case tensor.Int8:
		return onnxruntime.TensorElementDataTypeInt8
	case tensor.Uint16:
		return onnxruntime.TensorElementDataTypeUint16
	case tensor.Int16:
		return onnxruntime.TensorElementDataTypeInt16
	case tensor.Int32:
		return onnxruntime.TensorElementDataTypeInt32
	case tensor.Int64:
		return onnxruntime.TensorElementDataTypeInt64
	case tensor.Bool:
		return onnxruntime.TensorElementDataTypeBool
	case tensor.FP16:
		return onnxruntime.TensorElementDataTypeFloat16
	case tensor.FP64:
		return onnxruntime.TensorElementDataTypeDouble
	case tensor.Uint32:
		return onnxruntime.TensorElementDataTypeUint32
	case tensor.Uint64:
		return onnxruntime.TensorElementDataTypeUint64
	case tensor.BF16:
		return onnxruntime.TensorElementDataTypeBFloat16
	case tensor.Bytes:
		return onnxruntime.TensorElementDataTypeString
	}
	return onnxruntime.TensorElementDataTypeUndefined
}

// valueBytes returns the data of an output value as raw bytes, reinterpreting
// the Go slice onnxruntime_go filled rather than copying it. The bytes stay
// valid after the value is destroyed: Destroy releases the ORT value, not
// the Go memory behind it.
func valueBytes(v onnxruntime.Value) ([]byte, error) {
	switch t := v.(type) {
	case *onnxruntime.StringTensor:
		return stringBytes(t)
	case *onnxruntime.CustomDataTensor:
		return t.GetData(), nil
	case *onnxruntime.Tensor[float32]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[float64]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[uint8]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[int8]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[uint16]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[int16]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[uint32]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[int32]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[uint64]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[int64]:
		return asBytes(t.GetData()), nil
	case *onnxruntime.Tensor[bool]:
		// ORT and Go both store a bool as one byte holding 0 or 1.
		return asBytes(t.GetData()), nil
	}
	return nil, fmt.Errorf("unexpected ORT output value %T", v)
}

// asBytes views a slice of fixed-size elements as its little-endian bytes
// (every platform ORT's CPU build targets here is little-endian).
func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// alignedBytes allocates n zeroed bytes aligned for any element type.
func alignedBytes(n int) []byte {
	words := make([]uint64, (n+7)/8)
	return asBytes(words)[:n:n]
}
