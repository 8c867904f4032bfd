package config

import (
	"testing"
	"time"
)

func TestConfigMetricsValues(t *testing.T) {
	c := mustParseConfig(t, "metrics:\n  listen: \"\"\nrequest_log:\n  slow_threshold: 250ms\n  sample_every: 100\n", "t.yaml")
	if c.Metrics.Listen != "" || c.RequestLog.SlowThreshold.Duration != 250*time.Millisecond || c.RequestLog.SampleEvery != 100 {
		t.Errorf("parsed %+v %+v", c.Metrics, c.RequestLog)
	}
	d := mustParseConfig(t, "metrics:\nrequest_log: {}\n", "t.yaml")
	if d.Metrics.Listen != "127.0.0.1:8002" || d.RequestLog.SlowThreshold.Duration != time.Second || d.RequestLog.SampleEvery != 0 {
		t.Errorf("defaults %+v %+v", d.Metrics, d.RequestLog)
	}
}

func TestConfigMetricsErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each a prefix of one message, in order
	}{
		{"no port", "metrics:\n  listen: 127.0.0.1\n",
			[]string{`t.yaml:2: metrics.listen: "127.0.0.1" has no port (want host:port, e.g. 127.0.0.1:8002`}},
		{"same as listen", "listen: 127.0.0.1:9000\nmetrics:\n  listen: 127.0.0.1:9000\n",
			[]string{`t.yaml:3: metrics.listen: "127.0.0.1:9000" is also the public listen address`}},
		{"unknown key", "metrics:\n  port: 8002\n",
			[]string{`t.yaml:2: unknown key "port" in metrics (known keys: listen, allowed_hosts)`}},
		{"negative threshold", "request_log:\n  slow_threshold: -1s\n",
			[]string{`t.yaml:2: request_log.slow_threshold: -1s is negative`}},
		{"negative sample", "request_log:\n  sample_every: -1\n",
			[]string{`t.yaml:2: request_log.sample_every: -1 is out of range`}},
		{"threshold without unit", "request_log:\n  slow_threshold: 5\n",
			[]string{`t.yaml:2: request_log.slow_threshold: "5" is not a duration`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}
