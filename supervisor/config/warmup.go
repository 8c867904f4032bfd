package config

import (
	"fmt"
	"strings"
)

// A model's warmup key (ModelConfig.Warmup) says what its infer workers run
// before they serve it:
//
//   - "zeros" (the default, also ""): zero inputs at the batch sizes that
//     run (batch.WarmupSizes: 1, powers of two, the preferred sizes and
//     max_batch_size), dynamic dimensions at 1, fixed ones (0 included) as
//     declared; integer inputs get ones instead when the graph has a Div or
//     Mod (an integer division by zero kills the process inside ONNX
//     Runtime).
//   - "none": nothing; the first requests pay ONNX Runtime's first runs.
//   - a path ending in .json: a V2 infer request body, as a client would
//     POST it, replayed once. For models that reject zeros (Reshape or
//     Expand to a zero shape, a Slice step of 0, indices that must be in
//     range).
//
// A warm-up that fails makes the model unavailable, not the worker.

// The warm-up policies other than a request file. They are the values of
// worker.WarmupZeros and worker.WarmupNone, which the infer worker reads;
// config does not import worker, and a test in supervisor/ keeps the two
// equal.
const (
	WarmupZeros = "zeros"
	WarmupNone  = "none"
)

// warmup validates one model's warmup value.
func (v *configValidator) warmup(field, w string) {
	switch {
	case w == "", w == WarmupZeros, w == WarmupNone:
	case strings.HasSuffix(w, ".json"):
	default:
		v.errorf(field, "%q is not a warm-up policy (use zeros, none, or the path of a V2 request file ending in .json)", w)
	}
}

// warmupFileErrors checks that each warm-up request file exists, as
// CheckFiles does for model files.
func (c *Config) warmupFileErrors() []error {
	var errs []error
	for i, m := range c.Models {
		if !strings.HasSuffix(m.Warmup, ".json") {
			continue
		}
		if err := checkRegularFile(m.Warmup, "warm-up request file", "a V2 infer request body (JSON)"); err != nil {
			field := fmt.Sprintf("models[%d].warmup", i)
			errs = append(errs, &ConfigError{Source: c.origin.source, Line: c.origin.line(field), Field: field,
				Problem: fmt.Sprintf("model %q: %v", m.Name, err), Err: err})
		}
	}
	return errs
}
