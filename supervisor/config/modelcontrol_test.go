package config

import (
	"errors"
	"strings"
	"testing"
)

const twoModels = "models:\n  - {name: a, path: a.onnx}\n  - {name: b, path: b.onnx}\n"

func TestModelControl(t *testing.T) {
	c := mustParseConfig(t, twoModels, "t.yaml")
	if c.Explicit() || !c.LoadsAtStart("a") || !c.LoadsAtStart("b") {
		t.Errorf("default: model_control %q, want none with every model loading at start", c.ModelControl)
	}
	c = mustParseConfig(t, twoModels+"model_control: explicit\nstartup_models: [b]\n", "t.yaml")
	if !c.Explicit() || c.LoadsAtStart("a") || !c.LoadsAtStart("b") {
		t.Errorf("explicit with startup_models [b]: explicit %t, loads a %t, b %t", c.Explicit(), c.LoadsAtStart("a"), c.LoadsAtStart("b"))
	}
	for _, bad := range []struct{ yaml, field, says string }{
		{"model_control: poll\n", "model_control", `"poll" is not a model control mode`},
		{"startup_models: [a]\n", "startup_models", "model_control is none"},
		{"model_control: explicit\nstartup_models: [c]\n", "startup_models[0]", `"c" is not the name of a model`},
		{"model_control: explicit\nstartup_models: [a, a]\n", "startup_models[1]", "listed twice"},
	} {
		_, err := ParseConfig([]byte(twoModels+bad.yaml), "t.yaml")
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != bad.field || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%q: error %v, want a ConfigError on %s saying %q", bad.yaml, err, bad.field, bad.says)
		}
	}
}

func TestCheckBatching(t *testing.T) {
	b := DefaultBatching()
	if err := CheckBatching("batching", b); err != nil {
		t.Errorf("default batching: %v", err)
	}
	b.PreferredBatchSizes = []int{4}
	err := CheckBatching("batching", b)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "batching.preferred_batch_sizes" {
		t.Errorf("preferred sizes without max_batch_size: %v, want a ConfigError on batching.preferred_batch_sizes", err)
	}
}
