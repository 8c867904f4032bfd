package config

import (
	"testing"
	"time"
)

// A model's bound is its own, else infer's, else half the upstream timeout.
func TestConfigMaxRunTime(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       time.Duration
	}{
		{"default", "", 30 * time.Second},
		{"from upstream_timeout", "prep:\n  upstream_timeout: 8s\n", 4 * time.Second},
		{"infer's", "infer:\n  max_run_time: 2s\n", 2 * time.Second},
		{"model's own", "infer:\n  max_run_time: 2s\nmodels:\n  - name: m\n    path: m.onnx\n    max_run_time: 250ms\n", 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParseConfig(t, tt.yaml, "t.yaml")
			if got := c.MaxRunTime(c.Models[0]); got != tt.want {
				t.Errorf("MaxRunTime(models[0]) = %s, want %s", got, tt.want)
			}
		})
	}
}
