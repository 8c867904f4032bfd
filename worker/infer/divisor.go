package infer

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// integerDivisors returns the model inputs, among names, that are integer
// tensors: a zero in one of them makes ONNX Runtime divide by zero (1.24
// died of SIGFPE; 1.29 refuses it with an error), and a -1 beside the
// type's minimum as the dividend makes the quotient overflow, which traps
// on x86 in every version (SIGFPE), killing the worker and every model it
// serves.
func integerDivisors(md *tensor.Metadata, names []string) []string {
	var out []string
	for _, in := range md.Inputs {
		if in.DType.IsInteger() && slices.Contains(names, in.Name) {
			out = append(out, in.Name)
		}
	}
	return out
}

// checkDivisors refuses a request with a zero in an input the model
// divides by, or a -1 there while an input of the same 32- or 64-bit type
// holds that type's minimum (the one quotient that overflows), before it
// can reach ONNX Runtime: one hostile request must not take the worker
// down. A dividend computed inside the graph cannot be checked here; the
// poison quarantine bounds what such a body costs. The error wraps
// batch.ErrBadRequest (400).
func (m *model) checkDivisors(inputs []tensor.Tensor) error {
	for i := range inputs {
		t := &inputs[i]
		if !slices.Contains(m.divisors, t.Name) {
			continue
		}
		if k := zeroElement(t.Data, t.DType.Size()); k >= 0 {
			return fmt.Errorf("%w: input %q: element %d is 0, and model %q divides by this input "+
				"(an integer division by zero)", batch.ErrBadRequest, t.Name, k, m.md.Name)
		}
		if k := elementOf(t, -1); k >= 0 && holdsMin(inputs, t.DType) {
			return fmt.Errorf("%w: input %q: element %d is -1 while an input holds the smallest %s, and model %q "+
				"divides by this input (the quotient overflows, which would crash ONNX Runtime)",
				batch.ErrBadRequest, t.Name, k, t.DType, m.md.Name)
		}
	}
	return nil
}

// holdsMin says whether an input of dtype, a 32- or 64-bit signed
// integer, holds that type's minimum (narrower types are promoted to int
// in C++ and cannot overflow a division).
func holdsMin(inputs []tensor.Tensor, dtype tensor.DType) bool {
	var min int64
	switch dtype {
	case tensor.Int32:
		min = math.MinInt32
	case tensor.Int64:
		min = math.MinInt64
	default:
		return false
	}
	for i := range inputs {
		if inputs[i].DType == dtype && elementOf(&inputs[i], min) >= 0 {
			return true
		}
	}
	return false
}

// elementOf returns the index of the first element of t, a 32- or 64-bit
// signed integer tensor, equal to v, or -1 (also for other types).
func elementOf(t *tensor.Tensor, v int64) int {
	switch t.DType {
	case tensor.Int32:
		for i := 0; i+4 <= len(t.Data); i += 4 {
			if int64(int32(binary.LittleEndian.Uint32(t.Data[i:]))) == v {
				return i / 4
			}
		}
	case tensor.Int64:
		for i := 0; i+8 <= len(t.Data); i += 8 {
			if int64(binary.LittleEndian.Uint64(t.Data[i:])) == v {
				return i / 8
			}
		}
	}
	return -1
}

// zeroElement returns the index of the first all-zero element of size
// bytes in data, or -1.
func zeroElement(data []byte, size int) int {
	for i := 0; i+size <= len(data); i += size {
		zero := true
		for _, b := range data[i : i+size] {
			zero = zero && b == 0
		}
		if zero {
			return i / size
		}
	}
	return -1
}
