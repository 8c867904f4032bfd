package config

import "gopkg.in/yaml.v3"

// GRPCConfig is the KServe V2 gRPC listener (Triton's port 8001). Its
// requests take the public listener's admission and limits (auth, rate,
// max_in_flight, the body budget, max_body_bytes as the largest message):
// these keys bound only what is gRPC's own.
type GRPCConfig struct {
	// Listen is host:port; "" turns the gRPC listener off.
	Listen string `yaml:"listen"`
	// MaxConcurrentStreams bounds the RPCs one connection may have open
	// at once; a client that opens more waits for one to finish.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
}

// Defaults and limits of the grpc keys.
const (
	defaultGRPCListen        = "127.0.0.1:8001"
	defaultGRPCStreams       = 128
	maxGRPCConcurrentStreams = 1 << 16
)

func defaultGRPC() GRPCConfig {
	return GRPCConfig{Listen: defaultGRPCListen, MaxConcurrentStreams: defaultGRPCStreams}
}

// grpcKeys decode the grpc section.
func (d *configDecoder) grpcKeys(c *Config) configKey {
	return configKey{"grpc", func(n *yaml.Node, field string) {
		d.mapping(n, field, []configKey{
			{"listen", d.str(&c.GRPC.Listen)},
			{"max_concurrent_streams", d.integer(&c.GRPC.MaxConcurrentStreams)},
		})
	}}
}

// grpc validates the grpc section.
func (v *configValidator) grpc(c *Config) {
	g := c.GRPC
	if g.Listen != "" {
		v.address("grpc.listen", g.Listen, "want host:port, e.g. 127.0.0.1:8001, or \"\" to turn the gRPC listener off")
		if g.Listen == c.Listen || g.Listen == c.Metrics.Listen {
			v.errorf("grpc.listen", "%q is also the public or the metrics listen address (use another port, e.g. 8001)", g.Listen)
		}
	}
	if g.MaxConcurrentStreams < 1 || g.MaxConcurrentStreams > maxGRPCConcurrentStreams {
		v.errorf("grpc.max_concurrent_streams", "%d is out of range (1 to %d)", g.MaxConcurrentStreams, maxGRPCConcurrentStreams)
	}
}
