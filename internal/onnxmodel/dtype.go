package onnxmodel

import "github.com/supervisor-dev/supervisor/internal/tensor"

// elemType maps a tensor.DType to onnx.proto's TensorProto.DataType. It
// returns 0 (UNDEFINED) for Invalid.
func elemType(d tensor.DType) int32 {
	switch d {
	case tensor.FP32:
		return 1
	case tensor.Uint8:
		return 2
	case tensor.Int8:
		return 3
	case tensor.Uint16:
		return 4
	case tensor.Int16:
		return 5
	case tensor.Int32:
		return 6
	case tensor.Int64:
		return 7
	case tensor.Bool:
		return 9
	case tensor.FP16:
		return 10
	case tensor.FP64:
		return 11
	case tensor.Uint32:
		return 12
	case tensor.Uint64:
		return 13
	case tensor.BF16:
		return 16
	case tensor.Bytes:
		return 8 // STRING, for graph inputs and outputs only
	}
	return 0
}
