package batch

import (
	"context"
	"fmt"
	"slices"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// WarmUp runs the model once on zero inputs at each batch size of
// WarmupSizes, so that the batch sizes that run most do not pay ONNX
// Runtime's first-run cost for a shape (memory planning, kernel or
// algorithm selection, the arena growing). With batching off it is one
// run. Dynamic dimensions past the first are warmed at size 1 only; other
// sizes pay their first run; a dimension fixed at 0 stays 0. WarmUp calls
// the RunFunc directly, outside the queue and the statistics; call it
// before serving.
func (b *Batcher) WarmUp() error { return b.WarmUpFilled(false) }

// WarmUpFilled is WarmUp with integer inputs filled with ones instead of
// zeros when intOnes is set: for graphs that divide by an input, where an
// integer Div or Mod by zero raises SIGFPE inside ONNX Runtime and kills
// the process instead of failing the run.
func (b *Batcher) WarmUpFilled(intOnes bool) error {
	for _, n := range WarmupSizes(b.cfg.MaxBatchSize, b.cfg.PreferredBatchSizes) {
		inputs, err := WarmupInputs(b.md.Inputs, n, b.cfg.MaxBatchSize > 0, intOnes)
		if err == nil {
			_, err = b.run(context.Background(), inputs)
		}
		if err != nil {
			return fmt.Errorf("model %q: warm-up at batch size %d failed: %w", b.md.Name, n, err)
		}
	}
	return nil
}

// WarmupSizes are the batch sizes a zeros warm-up runs, in increasing
// order, for a batcher of maxBatch rows (0: batching off, one run) and its
// preferred sizes: 1, every power of two below maxBatch, the preferred
// sizes and maxBatch itself.
//
// Not every size from 1 to maxBatch: that is maxBatch²/2 rows, minutes
// for a max_batch_size of a few thousand (65536 never finished within any
// boot_timeout), and it bought little. The sizes here are the ones that
// run: 1 (light load), the preferred sizes (dispatched as soon as the
// queue can form them, so the common sizes under load) and maxBatch
// (saturation). The powers of two in between give one first run at every
// scale on the way: ONNX Runtime's arena bins its chunks by powers of two
// and grows once per bin, and GPU providers pick kernels per size class,
// so a partial batch after max_queue_delay finds the arena grown and pays
// at most a shape's plan. That costs at most 2·maxBatch rows plus the
// preferred sizes; the other sizes pay their first run once each, when
// they first occur.
func WarmupSizes(maxBatch int, preferred []int) []int {
	if maxBatch <= 0 {
		return []int{1}
	}
	sizes := []int{maxBatch}
	for n := 1; n < maxBatch; n *= 2 {
		sizes = append(sizes, n)
	}
	for _, n := range preferred {
		if n >= 1 && n <= maxBatch {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// WarmUpWith runs the model once on inputs (a replayed request), directly,
// as WarmUp does.
func (b *Batcher) WarmUpWith(inputs []tensor.Tensor) error {
	if _, err := b.run(context.Background(), inputs); err != nil {
		return fmt.Errorf("model %q: warm-up request failed: %w", b.md.Name, err)
	}
	return nil
}

// WarmupInputs builds the zeros warm-up's inputs (also what `supervisor
// check` times): rows rows when batching, every other
// dynamic dimension set to 1 and fixed ones (0 included) as declared,
// filled with zeros (BYTES: empty strings), or integer inputs with ones
// when intOnes.
func WarmupInputs(specs []tensor.Spec, rows int, batching, intOnes bool) ([]tensor.Tensor, error) {
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
