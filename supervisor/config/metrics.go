package config

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MetricsConfig is the metrics listener: Prometheus text at /metrics and a
// live HTML status page at /status, both read from the scoreboard.
type MetricsConfig struct {
	// Listen is host:port, as Triton's metrics port (8002). Loopback by
	// default: the page shows pids, models and load to anyone who can
	// reach it. "" turns the listener off.
	Listen string `yaml:"listen"`
	// AllowedHosts are Host names the listener answers besides IP
	// literals, loopback names and the host of Listen (say the machine's
	// DNS name, for a scraper that uses it); any other name gets 403,
	// which keeps a web page in a local browser from reading it through
	// DNS rebinding.
	AllowedHosts []string `yaml:"allowed_hosts,flow"`
}

// RequestLogConfig says which requests the master logs, beyond lifecycle
// events: every slow one, and a sample of the rest.
type RequestLogConfig struct {
	// SlowThreshold logs, at warn, every request through the lb that took
	// longer than this; 0 turns the slow-request log off.
	SlowThreshold Duration `yaml:"slow_threshold"`
	// SampleEvery logs one request in this many at info (1 logs them all);
	// 0 turns the sampled request log off.
	SampleEvery int `yaml:"sample_every"`
}

// Defaults and limits of the metrics and request-log keys.
const (
	defaultMetricsListen = "127.0.0.1:8002"
	defaultSlowRequest   = time.Second
	maxSampleEvery       = 1 << 30
)

func defaultMetrics() MetricsConfig { return MetricsConfig{Listen: defaultMetricsListen} }

func defaultRequestLog() RequestLogConfig {
	return RequestLogConfig{SlowThreshold: Duration{defaultSlowRequest}}
}

// metricsKeys decode the metrics and request_log sections.
func (d *configDecoder) metricsKeys(c *Config) []configKey {
	return []configKey{
		{"metrics", func(n *yaml.Node, field string) {
			d.mapping(n, field, []configKey{{"listen", d.str(&c.Metrics.Listen)}, {"allowed_hosts", d.strs(&c.Metrics.AllowedHosts)}})
		}},
		{"request_log", func(n *yaml.Node, field string) {
			d.mapping(n, field, []configKey{
				{"slow_threshold", d.duration(&c.RequestLog.SlowThreshold)},
				{"sample_every", d.integer(&c.RequestLog.SampleEvery)},
			})
		}},
	}
}

// metrics validates the metrics and request_log sections.
func (v *configValidator) metrics(c *Config) {
	if c.Metrics.Listen != "" {
		v.address("metrics.listen", c.Metrics.Listen, "want host:port, e.g. 127.0.0.1:8002, or \"\" to turn the metrics listener off")
		if c.Metrics.Listen == c.Listen {
			v.errorf("metrics.listen", "%q is also the public listen address (use another port, e.g. 8002)", c.Metrics.Listen)
		}
	}
	for _, h := range c.Metrics.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ \t") {
			v.errorf("metrics.allowed_hosts", "%q is not a host name (want names such as gpu-7.example.com or 10.0.0.5)", h)
		}
	}
	if c.RequestLog.SlowThreshold.Duration < 0 {
		v.errorf("request_log.slow_threshold", "%s is negative (use 0 to turn the slow-request log off, or e.g. 1s)", c.RequestLog.SlowThreshold)
	}
	if n := c.RequestLog.SampleEvery; n < 0 || n > maxSampleEvery {
		v.errorf("request_log.sample_every", "%d is out of range (use 0 for no sampled request log, 1 for every request, or e.g. 1000)", n)
	}
}
