package config

import (
	"time"

	"gopkg.in/yaml.v3"
)

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
	// MaxConnections caps the gRPC listener's open connections, apart
	// from limits.max_connections (the public listener's): one is
	// answered GOAWAY and closed at once beyond it, so an attacker
	// filling one listener does not shut the other's new clients out. An
	// HTTP/2 connection carries max_concurrent_streams RPCs at once, so a
	// client needs one where an HTTP client opens many.
	MaxConnections int `yaml:"max_connections"`
	// MaxRPCs caps the RPCs open at once across the gRPC listener, from
	// their header (before their message) to their end; one more is
	// refused RESOURCE_EXHAUSTED at once. Each costs the master about
	// 20 KiB before its message is in (gRPC's stream and a handler
	// goroutine), so this, not max_connections x max_concurrent_streams,
	// bounds what a client opening streams and sending nothing holds.
	MaxRPCs int `yaml:"max_rpcs"`
	// AbusePenalty slows down the new connections of a client address
	// (IP) one of whose connections was closed for misbehaviour (HTTP/2
	// rapid reset: too many streams ended before their message; pings
	// too often (gRPC's GOAWAY); an answer not taken within
	// limits.write_timeout): one is admitted per
	// wait, which starts at this and doubles with each closure up to 16x,
	// and is forgotten after twice that without one. Closing alone costs
	// an attacker nothing: it redials. The address's open connections
	// are untouched; its other clients' new connections are refused
	// GOAWAY meanwhile (gRPC clients retry). 0s turns it off.
	AbusePenalty Duration `yaml:"abuse_penalty"`
}

// Defaults and limits of the grpc keys.
const (
	defaultGRPCListen        = "127.0.0.1:8001"
	defaultGRPCStreams       = 128
	maxGRPCConcurrentStreams = 1 << 16
	defaultGRPCConnections   = 1000
	maxGRPCConnections       = 1 << 20
	defaultGRPCRPCs          = 4096
	maxGRPCRPCs              = 1 << 20
	defaultGRPCAbusePenalty  = time.Second
	maxGRPCAbusePenalty      = time.Minute
)

func defaultGRPC() GRPCConfig {
	return GRPCConfig{Listen: defaultGRPCListen, MaxConcurrentStreams: defaultGRPCStreams, MaxConnections: defaultGRPCConnections, MaxRPCs: defaultGRPCRPCs,
		AbusePenalty: Duration{defaultGRPCAbusePenalty}}
}

// grpcKeys decode the grpc section.
func (d *configDecoder) grpcKeys(c *Config) configKey {
	return configKey{"grpc", func(n *yaml.Node, field string) {
		d.mapping(n, field, []configKey{
			{"listen", d.str(&c.GRPC.Listen)},
			{"max_concurrent_streams", d.integer(&c.GRPC.MaxConcurrentStreams)},
			{"max_connections", d.integer(&c.GRPC.MaxConnections)},
			{"max_rpcs", d.integer(&c.GRPC.MaxRPCs)},
			{"abuse_penalty", d.duration(&c.GRPC.AbusePenalty)},
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
	if g.MaxConnections < 1 || g.MaxConnections > maxGRPCConnections {
		v.errorf("grpc.max_connections", "%d is out of range (1 to %d)", g.MaxConnections, maxGRPCConnections)
	}
	if g.MaxRPCs < 1 || g.MaxRPCs > maxGRPCRPCs {
		v.errorf("grpc.max_rpcs", "%d is out of range (1 to %d)", g.MaxRPCs, maxGRPCRPCs)
	}
	if p := g.AbusePenalty.Duration; p < 0 || p > maxGRPCAbusePenalty {
		v.errorf("grpc.abuse_penalty", "%v is out of range (0s, which turns it off, to %v)", p, maxGRPCAbusePenalty)
	}
}
