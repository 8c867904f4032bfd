package config

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// TracingConfig is Triton's trace extension over OpenTelemetry: where
// every process exports its spans (OTLP/gRPC), and the trace settings the
// master starts with, which GET and POST /v2/trace/setting read and
// change at run time (internal/tracing).
type TracingConfig struct {
	// Endpoint is the OTLP/gRPC collector, host:port (an OpenTelemetry
	// Collector's 4317). "" (the default) turns tracing off: no spans,
	// no trace routes, and nothing on the request path.
	Endpoint string `yaml:"endpoint"`
	// TLS dials the collector over TLS, checked against the host's CA
	// roots; false (the default) dials plain text.
	TLS bool `yaml:"tls"`
	// Level is the starting trace_level: timestamps (the default: a
	// configured endpoint means tracing) or off (the API turns it on).
	Level string `yaml:"level"`
	// Rate is the starting trace_rate: one request in Rate is traced.
	Rate int `yaml:"rate"`
	// Count is the starting trace_count: how many requests are traced
	// before tracing stops; -1 (the default) never stops.
	Count int `yaml:"count"`
	// QueueSize bounds the spans each process holds for export; over it
	// spans are dropped and counted, so a collector that is down costs
	// at most this much memory.
	QueueSize int `yaml:"queue_size"`
	// BatchSize is the most spans one export sends.
	BatchSize int `yaml:"batch_size"`
	// ExportTimeout bounds one export, retries included.
	ExportTimeout Duration `yaml:"export_timeout"`
}

// Defaults and limits of the tracing keys.
const (
	defaultTraceRate      = 1000
	defaultTraceQueue     = 2048
	defaultTraceBatch     = 512
	maxTraceQueue         = 1 << 20
	defaultTraceExport    = 10 * time.Second
	maxTraceExportTimeout = 5 * time.Minute
)

func defaultTracing() TracingConfig {
	return TracingConfig{Level: "timestamps", Rate: defaultTraceRate, Count: -1,
		QueueSize: defaultTraceQueue, BatchSize: defaultTraceBatch, ExportTimeout: Duration{defaultTraceExport}}
}

// tracingKeys decode the tracing section.
func (d *configDecoder) tracingKeys(c *Config) configKey {
	return configKey{"tracing", func(n *yaml.Node, field string) { d.mapping(n, field, d.fieldKeys(&c.Tracing)) }}
}

// tracing validates the tracing section.
func (v *configValidator) tracing(c *Config) {
	t := c.Tracing
	if t.Endpoint != "" {
		if strings.Contains(t.Endpoint, "://") {
			v.errorf("tracing.endpoint", "%q: want host:port of an OTLP/gRPC collector, e.g. 127.0.0.1:4317, without a scheme (tls: true dials it over TLS)", t.Endpoint)
		} else {
			v.address("tracing.endpoint", t.Endpoint, "want host:port of an OTLP/gRPC collector, e.g. 127.0.0.1:4317, or \"\" to turn tracing off")
		}
	}
	if l := strings.ToLower(t.Level); l != "off" && l != "timestamps" {
		v.errorf("tracing.level", "%q: want timestamps or off (Triton's trace_level; tensors is not served)", t.Level)
	}
	if t.Rate < 1 {
		v.errorf("tracing.rate", "%d: want at least 1 (one request in rate is traced)", t.Rate)
	}
	if t.Count < -1 {
		v.errorf("tracing.count", "%d: want -1 (no bound) or how many requests to trace, from 0", t.Count)
	}
	if t.QueueSize < 1 || t.QueueSize > maxTraceQueue {
		v.errorf("tracing.queue_size", "%d: want 1 to %d spans", t.QueueSize, maxTraceQueue)
	}
	if t.BatchSize < 1 {
		v.errorf("tracing.batch_size", "%d: want at least 1 span", t.BatchSize)
	}
	if d := t.ExportTimeout.Duration; d <= 0 || d > maxTraceExportTimeout {
		v.errorf("tracing.export_timeout", "%s: want more than 0 and at most %s", t.ExportTimeout, maxTraceExportTimeout)
	}
}
