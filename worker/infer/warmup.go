package infer

import (
	"fmt"
	"os"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
)

// integerDivisionOps are the operators that raise SIGFPE inside ONNX
// Runtime, killing the process, when they divide integers by zero.
var integerDivisionOps = []string{"Mod", "Div"}

// warmUp runs m's warm-up policy (worker.Model.Warmup) on its batcher: zero
// inputs at every batch size, nothing, or a V2 request replayed once. An
// error marks the model unavailable; a crash inside ONNX Runtime is caught
// by the master (worker.ModelWarming).
func warmUp(m worker.Model, b *batch.Batcher, md *tensor.Metadata) error {
	switch m.Warmup {
	case worker.WarmupNone:
		return nil
	case "", worker.WarmupZeros:
		return b.WarmUpFilled(dividesIntegers(m.Path))
	default:
		inputs, err := warmupRequest(m.Warmup, md)
		if err != nil {
			return fmt.Errorf("model %q: warmup %q: %w", m.Name, m.Warmup, err)
		}
		return b.WarmUpWith(inputs)
	}
}

// dividesIntegers reports whether the model's graph has an operator that
// may divide integers (any Div or Mod: the graph's types are not read).
// Then the zero warm-up fills integer inputs with ones. It is a cheap
// guess, not a guarantee: a divisor computed inside the graph can still
// be zero. An unreadable file says no; ONNX Runtime reports it when it
// loads the model.
func dividesIntegers(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	ops, err := onnxmodel.OpTypes(b)
	if err != nil {
		return false
	}
	for _, op := range integerDivisionOps {
		if ops[op] {
			return true
		}
	}
	return false
}

// warmupRequest reads a V2 infer request body (JSON, as a client would
// POST it) from path and validates it against the model.
func warmupRequest(path string, md *tensor.Metadata) ([]tensor.Tensor, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	req, err := v2.DecodeInferRequest(body, -1)
	if err == nil {
		err = req.Validate(md)
	}
	if err != nil {
		return nil, fmt.Errorf("not a valid V2 request for the model: %w", err)
	}
	return req.Inputs, nil
}
