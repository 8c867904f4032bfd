package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Float64s returns the elements of a numeric tensor widened to float64, for
// postprocessing such as ranking classes. Every FP16, BF16, FP32 and integer
// value up to 2^53 is exact; Bool is 0 or 1. Bytes tensors are an error.
func (t *Tensor) Float64s() ([]float64, error) {
	size := t.DType.Size()
	if size == 0 {
		return nil, fmt.Errorf("tensor %q: %s has no numeric values", t.Name, t.DType)
	}
	out := make([]float64, len(t.Data)/size)
	for i := range out {
		out[i] = elementFloat64(t.DType, t.Data[i*size:(i+1)*size])
	}
	return out, nil
}

func elementFloat64(d DType, b []byte) float64 {
	switch d {
	case FP32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case FP64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case FP16:
		return float64(FP16To32(binary.LittleEndian.Uint16(b)))
	case BF16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	case Int8:
		return float64(int8(b[0]))
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case Bool, Uint8:
		return float64(b[0])
	case Uint16:
		return float64(binary.LittleEndian.Uint16(b))
	case Uint32:
		return float64(binary.LittleEndian.Uint32(b))
	}
	return float64(binary.LittleEndian.Uint64(b))
}
