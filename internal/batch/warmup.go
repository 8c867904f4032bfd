package batch

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// WarmUp runs the model once on zero inputs at every batch size the
// Batcher may form, so that no request pays ONNX Runtime's first-run cost
// for a shape (memory planning, kernel selection). That is every size from 1
// to MaxBatchSize: preferred sizes do not narrow it, since a partial batch
// after MaxQueueDelay, or one cut short because the next request does not
// fit, can have any size. With batching off it is one run. Dynamic
// dimensions past the first are warmed at size 1 only; other sizes pay
// their first run. WarmUp calls the RunFunc directly, outside the queue and
// the statistics; call it before serving.
func (b *Batcher) WarmUp() error {
	sizes := b.cfg.MaxBatchSize
	if sizes == 0 {
		sizes = 1
	}
	for n := 1; n <= sizes; n++ {
		inputs, err := zeroInputs(b.md.Inputs, n, b.cfg.MaxBatchSize > 0)
		if err == nil {
			_, err = b.run(inputs)
		}
		if err != nil {
			return fmt.Errorf("model %q: warm-up at batch size %d failed: %w", b.md.Name, n, err)
		}
	}
	return nil
}

// zeroInputs builds all-zero inputs with rows rows when batching, every
// other dynamic dimension set to 1.
func zeroInputs(specs []tensor.Spec, rows int, batching bool) ([]tensor.Tensor, error) {
	inputs := make([]tensor.Tensor, len(specs))
	for i, s := range specs {
		shape := make([]int64, len(s.Shape))
		for j, d := range s.Shape {
			shape[j] = max(d, 1)
		}
		if batching {
			shape[0] = int64(rows)
		}
		n, err := tensor.NumElements(shape)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", s.Name, err)
		}
		inputs[i] = tensor.Tensor{Name: s.Name, DType: s.DType, Shape: shape, Data: make([]byte, n*int64(s.DType.Size()))}
	}
	return inputs, nil
}
