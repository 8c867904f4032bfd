package config

import (
	"fmt"
	"slices"
)

// Model control modes (Config.ModelControl), after Triton's
// --model-control-mode. With none the file alone says what is served and
// the repository API's load and unload are refused; with explicit they
// load and unload models of the file at run time (supervisor/repository.go
// says how that state and the file meet across reloads and restarts).
// Triton's poll mode has no equivalent: a reload (SIGHUP) is our poll.
const (
	ModelControlNone     = "none"
	ModelControlExplicit = "explicit"
)

// modelControl validates model_control and startup_models.
func (v *configValidator) modelControl(c *Config) {
	switch c.ModelControl {
	case ModelControlNone:
		if len(c.StartupModels) > 0 {
			v.errorf("startup_models", "is set but model_control is none, where every model of the file loads at start (set model_control: explicit, or remove startup_models)")
		}
	case ModelControlExplicit:
	default:
		v.errorf("model_control", "%q is not a model control mode (use none or explicit)", c.ModelControl)
	}
	for i, name := range c.StartupModels {
		field := fmt.Sprintf("startup_models[%d]", i)
		switch {
		case !c.ServesModel(name):
			v.errorf(field, "%q is not the name of a model in models (list names from models, or remove startup_models to load them all)", name)
		case slices.Contains(c.StartupModels[:i], name):
			v.errorf(field, "%q is listed twice (list each model once)", name)
		}
	}
}

// LoadsAtStart reports whether the model of that name loads without an
// API call: every model does, unless startup_models lists others.
func (c *Config) LoadsAtStart(name string) bool {
	return len(c.StartupModels) == 0 || slices.Contains(c.StartupModels, name)
}

// Explicit reports whether model_control is explicit.
func (c *Config) Explicit() bool { return c.ModelControl == ModelControlExplicit }

// CheckBatching validates a batching section built in code (a model
// config override from the repository API); field names it in errors.
func CheckBatching(field string, b *BatchingConfig) error {
	v := &configValidator{}
	v.batching(field, b)
	return joinSorted(v.errs)
}
