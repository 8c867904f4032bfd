package config

import (
	"errors"
	"testing"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/ort"
)

const outBindingYAML = `infer:
  output_binding: pinned
models:
  - name: a
    path: a.onnx
  - name: b
    path: b.onnx
    output_binding: "off"
  - name: c
    path: c.onnx
    output_binding: pinned
`

func TestConfigOutputBindingValues(t *testing.T) {
	c := mustParseConfig(t, outBindingYAML, "t.yaml")
	for i, want := range []ort.OutputBinding{ort.OutputsPinned, ort.OutputsOff, ort.OutputsPinned} {
		if got := c.ModelOutputBinding(c.Models[i]); got != want {
			t.Errorf("model %s: output binding %q, want %q", c.Models[i].Name, got, want)
		}
	}
	d := mustParseConfig(t, "models: [{name: m, path: m.onnx}]\n", "t.yaml")
	if got := d.ModelOutputBinding(d.Models[0]); got != ort.OutputsOff {
		t.Errorf("default output binding %q, want off (not measured on a GPU yet)", got)
	}
	if d.Infer.OutputBinding != "off" {
		t.Errorf("infer.output_binding defaults to %q, want \"off\" written out", d.Infer.OutputBinding)
	}
}

func TestConfigOutputBindingErrors(t *testing.T) {
	_, err := ParseConfig([]byte("infer:\n  output_binding: mapped\nmodels:\n  - name: m\n    path: m.onnx\n    output_binding: Pinned\n"), "t.yaml")
	checkConfigErrors(t, err, []string{
		`t.yaml:2: infer.output_binding: "mapped" is not one of off, pinned`,
		`t.yaml:6: models[0].output_binding: "Pinned" is not one of off, pinned`,
	})
	_, err = ParseConfig([]byte("infer:\n  output_binding: ''\n"), "t.yaml")
	checkConfigErrors(t, err, []string{`t.yaml:2: infer.output_binding: "" is not one of off, pinned`})
}

// TestConfigCheckOutputBindings: pinned on a plan without GPU workers is
// refused for each model that asks for it, at the line that asks, with
// ort.ErrPinnedNeedsGPU; a GPU plan takes it.
func TestConfigCheckOutputBindings(t *testing.T) {
	c := mustParseConfig(t, outBindingYAML, "t.yaml")
	cpuPlan := &affinity.Placement{Workers: []affinity.Assignment{{Name: "infer-0", Role: affinity.RoleInfer}, {Name: "prep-0", Role: affinity.RolePrep}}}
	err := c.CheckOutputBindings(cpuPlan)
	checkConfigErrors(t, err, []string{
		`t.yaml:2: infer.output_binding: model "a": output_binding: pinned needs a GPU (CUDA) session, and this host's plan has none`,
		`t.yaml:11: models[2].output_binding: model "c": output_binding: pinned needs a GPU (CUDA) session, and this host's plan has none`,
	})
	if !errors.Is(err, ort.ErrPinnedNeedsGPU) || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("CheckOutputBindings: %v does not match ort.ErrPinnedNeedsGPU and ErrInvalidConfig", err)
	}
	gpuPlan := &affinity.Placement{Workers: []affinity.Assignment{{Name: "infer-0", Role: affinity.RoleInfer, GPU: &affinity.GPU{}}}}
	if err := c.CheckOutputBindings(gpuPlan); err != nil {
		t.Errorf("CheckOutputBindings on a GPU plan: %v", err)
	}
	off := mustParseConfig(t, "models: [{name: m, path: m.onnx}]\n", "t.yaml")
	if err := off.CheckOutputBindings(cpuPlan); err != nil {
		t.Errorf("CheckOutputBindings with output_binding off: %v", err)
	}
}
