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
// inputs at the batch sizes that run (batch.WarmupSizes; integer inputs as
// ones when g says the graph divides), nothing, or a V2 request replayed
// once.
//
// A warm-up run that ONNX Runtime refuses does not make the model
// unavailable: zeros are not valid inputs of every valid graph (a Reshape
// or Expand to a shape read from an input, a Range of step 0, OneHot or
// Slice indices), and the warm-up exists to pay ONNX Runtime's first runs
// before a client does, not to judge the model. warmUp then returns why
// (failed, for the log and status): the model serves, and its first
// requests pay the first runs, as with warmup: none. err is for a warm-up
// request file that is not a request for the model: the config is wrong,
// and the model is unavailable with that reason. A crash inside ONNX
// Runtime cannot be returned: the master catches it (worker.ModelWarming).
func warmUp(m worker.Model, b *batch.Batcher, md *tensor.Metadata, g graphFacts) (failed string, err error) {
	var runErr error
	switch m.Warmup {
	case worker.WarmupNone:
		return "", nil
	case "", worker.WarmupZeros:
		runErr = b.WarmUpFilled(g.divides)
	default:
		inputs, err := warmupRequest(m.Warmup, md)
		if err != nil {
			return "", fmt.Errorf("model %q: warmup %q: %w", m.Name, m.Warmup, err)
		}
		runErr = b.WarmUpWith(inputs)
	}
	if runErr != nil {
		return warmupFailed(runErr), nil
	}
	return "", nil
}

// warmupFailed is the warning of a warm-up that ONNX Runtime refused.
func warmupFailed(err error) string {
	return err.Error() + "; the model serves anyway: its first requests pay ONNX Runtime's first runs " +
		"(zeros are not valid inputs of every graph: set warmup to a request file of valid inputs, or to none to silence this)"
}

// graphFacts is what the infer worker reads from a model file itself,
// since ONNX Runtime does not say: whether the graph may divide integers
// (any Div or Mod: the graph's types are not read), and which graph inputs
// are a Div's or Mod's divisor directly.
type graphFacts struct {
	divides  bool
	divisors []string
}

// readGraph reads graphFacts from the model file. It is a cheap guess, not
// a guarantee: a divisor computed inside the graph can still be zero. An
// unreadable file gives no facts; ONNX Runtime reports it when it loads
// the model.
func readGraph(path string) graphFacts {
	b, err := os.ReadFile(path)
	if err != nil {
		return graphFacts{}
	}
	var g graphFacts
	if ops, err := onnxmodel.OpTypes(b); err == nil {
		for _, op := range integerDivisionOps {
			g.divides = g.divides || ops[op]
		}
	}
	g.divisors, _ = onnxmodel.DivisorInputs(b)
	return g
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
