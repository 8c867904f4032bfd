package config

import (
	"testing"
	"time"
)

func TestConfigTracingValues(t *testing.T) {
	c := mustParseConfig(t, "tracing:\n  endpoint: 127.0.0.1:4317\n  level: off\n  rate: 1\n  count: 10\n  queue_size: 64\n  batch_size: 8\n  export_timeout: 2s\n", "t.yaml")
	want := TracingConfig{Endpoint: "127.0.0.1:4317", Level: "off", Rate: 1, Count: 10, QueueSize: 64, BatchSize: 8, ExportTimeout: Duration{2 * time.Second}}
	if c.Tracing != want {
		t.Errorf("parsed %+v, want %+v", c.Tracing, want)
	}
	if d := mustParseConfig(t, "listen: 127.0.0.1:8000\n", "t.yaml"); d.Tracing != defaultTracing() || d.Tracing.Endpoint != "" {
		t.Errorf("defaults %+v: want tracing off (no endpoint)", d.Tracing)
	}
}

func TestConfigTracingErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"scheme", "tracing:\n  endpoint: http://127.0.0.1:4317\n",
			[]string{`t.yaml:2: tracing.endpoint: "http://127.0.0.1:4317": want host:port of an OTLP/gRPC collector`}},
		{"no port", "tracing:\n  endpoint: collector\n",
			[]string{`t.yaml:2: tracing.endpoint: "collector" has no port`}},
		{"level", "tracing:\n  endpoint: 127.0.0.1:4317\n  level: tensors\n",
			[]string{`t.yaml:3: tracing.level: "tensors": want timestamps or off`}},
		{"rate", "tracing:\n  rate: 0\n",
			[]string{`t.yaml:2: tracing.rate: 0: want at least 1`}},
		{"count", "tracing:\n  count: -5\n",
			[]string{`t.yaml:2: tracing.count: -5: want -1 (no bound)`}},
		{"queue", "tracing:\n  queue_size: 0\n",
			[]string{`t.yaml:2: tracing.queue_size: 0: want 1 to 1048576 spans`}},
		{"export timeout", "tracing:\n  export_timeout: 0s\n",
			[]string{`t.yaml:2: tracing.export_timeout: 0s: want more than 0`}},
		{"unknown key", "tracing:\n  collector: x\n",
			[]string{`t.yaml:2: unknown key "collector" in tracing`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}
