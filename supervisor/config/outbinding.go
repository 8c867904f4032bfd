package config

import (
	"fmt"
	"slices"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/ort"
)

// output_binding says where a GPU worker's ONNX Runtime puts a model's
// outputs before they are copied into the worker's Go memory:
//
//   - "off" (the default): ONNX Runtime copies them from the GPU into host
//     memory it allocates, and onnxruntime_go copies that again.
//   - "pinned": into CUDA pinned host memory, bound through an I/O
//     binding, from which they are copied once (internal/ort, outbind.go).
//
// It stays off by default until it has been measured on a GPU
// (scripts/gpu-check runs both). "pinned" needs a GPU worker: with the
// CPU provider the outputs are in host memory already, so pinned memory
// has nothing to save, and the CPU build of ONNX Runtime cannot allocate
// it. Rather than ignore it there, which would let a config that was
// meant to be measured look applied, `supervisor check` refuses it on a
// host whose plan has no GPU worker (supervisor/hostcheck), and a CPU
// worker given it serves the model as unavailable, with ort's
// ErrPinnedNeedsGPU naming the model.
const (
	outputBindingOff    = string(ort.OutputsOff)
	outputBindingPinned = string(ort.OutputsPinned)
)

var outputBindings = []string{outputBindingOff, outputBindingPinned}

// outputBinding validates an output_binding value; a model's may be empty
// (infer.output_binding then applies).
func (v *configValidator) outputBinding(field, value string, model bool) {
	if model && value == "" || slices.Contains(outputBindings, value) {
		return
	}
	v.errorf(field, "%q is not one of off, pinned (pinned binds a GPU worker's outputs to pinned host memory; off is the default)", value)
}

// ModelOutputBinding is the output binding model m runs with: its own,
// or infer.output_binding; "" (a Config not from ParseConfig) is off.
func (c *Config) ModelOutputBinding(m ModelConfig) ort.OutputBinding {
	b := m.OutputBinding
	if b == "" {
		b = c.Infer.OutputBinding
	}
	if b == "" {
		b = outputBindingOff
	}
	return ort.OutputBinding(b)
}

// outputBindingField names where model i's output binding is set: its
// own key, or infer's.
func (c *Config) outputBindingField(i int) string {
	if c.Models[i].OutputBinding != "" {
		return fmt.Sprintf("models[%d].output_binding", i)
	}
	return "infer.output_binding"
}

// CheckOutputBindings refuses output_binding: pinned when plan has no GPU
// worker: one *ConfigError per model that asks for it, at the line that
// sets it, wrapping ort.ErrPinnedNeedsGPU. A plan is all GPU workers or
// all CPU workers (infer.gpus), so one GPU worker is enough.
func (c *Config) CheckOutputBindings(plan *affinity.Placement) error {
	for _, a := range plan.Workers {
		if a.GPU != nil {
			return nil
		}
	}
	var errs []error
	for i, m := range c.Models {
		if c.ModelOutputBinding(m) != ort.OutputsPinned {
			continue
		}
		errs = append(errs, c.configError(c.outputBindingField(i), fmt.Errorf(
			"model %q: %w, and this host's plan has none (set output_binding: off for this model, or give the infer pool a GPU with infer.gpus)",
			m.Name, ort.ErrPinnedNeedsGPU)))
	}
	return joinSorted(errs)
}
