package modelcheck

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Load loads every model with ONNX Runtime in this process, as an
// infer worker would (CPU provider, one thread), and returns one
// ConfigError per model that does not load, at its path's line; nil when
// all load. It does not warm models up: a warm-up may kill the process
// (SIGFPE inside ONNX Runtime), which an infer worker survives (the
// master skips the model) and `supervisor check` would not. It needs the
// ONNX Runtime library; config.CheckFiles reports a missing one.
func Load(c *config.Config) error {
	if err := ort.Init(c.ONNXRuntimeLibrary); err != nil {
		return err
	}
	var errs []error
	for i, m := range c.Models {
		s, err := ort.Open(m.Path, m.Name, ort.Options{IntraOpThreads: 1})
		if err == nil {
			_ = s.Close()
			continue
		}
		field := fmt.Sprintf("models[%d].path", i)
		errs = append(errs, c.FieldError(field,
			fmt.Errorf("model %q does not load, so it would be unavailable (the others would serve): %w", m.Name, err)))
	}
	return config.JoinByLine(errs)
}
