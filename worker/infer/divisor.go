package infer

import (
	"fmt"
	"slices"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// integerDivisors returns the model inputs, among names, that are integer
// tensors: a zero in one of them would make ONNX Runtime divide by zero in
// C++ (SIGFPE), killing the worker and every model it serves.
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
// divides by, before it can reach ONNX Runtime: one hostile request must
// not take the worker down. The error wraps batch.ErrBadRequest (400).
func (m *model) checkDivisors(inputs []tensor.Tensor) error {
	for i := range inputs {
		t := &inputs[i]
		if !slices.Contains(m.divisors, t.Name) {
			continue
		}
		if k := zeroElement(t.Data, t.DType.Size()); k >= 0 {
			return fmt.Errorf("%w: input %q: element %d is 0, and model %q divides by this input "+
				"(an integer division by zero would crash ONNX Runtime)", batch.ErrBadRequest, t.Name, k, m.md.Name)
		}
	}
	return nil
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
