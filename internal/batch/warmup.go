package batch

import (
	"context"
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
// their first run; a dimension fixed at 0 stays 0. WarmUp calls the RunFunc
// directly, outside the queue and the statistics; call it before serving.
func (b *Batcher) WarmUp() error { return b.WarmUpFilled(false) }

// WarmUpFilled is WarmUp with integer inputs filled with ones instead of
// zeros when intOnes is set: for graphs that divide by an input, where an
// integer Div or Mod by zero raises SIGFPE inside ONNX Runtime and kills
// the process instead of failing the run.
func (b *Batcher) WarmUpFilled(intOnes bool) error {
	sizes := b.cfg.MaxBatchSize
	if sizes == 0 {
		sizes = 1
	}
	for n := 1; n <= sizes; n++ {
		inputs, err := warmupInputs(b.md.Inputs, n, b.cfg.MaxBatchSize > 0, intOnes)
		if err == nil {
			_, err = b.run(context.Background(), inputs)
		}
		if err != nil {
			return fmt.Errorf("model %q: warm-up at batch size %d failed: %w", b.md.Name, n, err)
		}
	}
	return nil
}

// WarmUpWith runs the model once on inputs (a replayed request), directly,
// as WarmUp does.
func (b *Batcher) WarmUpWith(inputs []tensor.Tensor) error {
	if _, err := b.run(context.Background(), inputs); err != nil {
		return fmt.Errorf("model %q: warm-up request failed: %w", b.md.Name, err)
	}
	return nil
}

// warmupInputs builds inputs with rows rows when batching, every other
// dynamic dimension set to 1 and fixed ones (0 included) as declared,
// filled with zeros (BYTES: empty strings), or integer inputs with ones
// when intOnes.
func warmupInputs(specs []tensor.Spec, rows int, batching, intOnes bool) ([]tensor.Tensor, error) {
	inputs := make([]tensor.Tensor, len(specs))
	for i, s := range specs {
		shape := make([]int64, len(s.Shape))
		for j, d := range s.Shape {
			shape[j] = d
			if d < 0 {
				shape[j] = 1
			}
		}
		if batching {
			shape[0] = int64(rows)
		}
		n, err := tensor.NumElements(shape)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", s.Name, err)
		}
		size := int64(s.DType.Size())
		if s.DType == tensor.Bytes {
			size = 4 // each element an empty string: a zero length prefix, Triton's zero_data for TYPE_STRING
		}
		data := make([]byte, n*size)
		if intOnes && s.DType.IsInteger() {
			fillOnes(data, s.DType.Size())
		}
		inputs[i] = tensor.Tensor{Name: s.Name, DType: s.DType, Shape: shape, Data: data}
	}
	return inputs, nil
}

// fillOnes writes the integer 1 (little-endian, as tensors are laid out on
// the hosts we run on) into every size-byte element of data.
func fillOnes(data []byte, size int) {
	for i := 0; i < len(data); i += size {
		data[i] = 1
	}
}
