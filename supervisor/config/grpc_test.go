package config

import (
	"testing"
	"time"
)

func TestConfigGRPCValues(t *testing.T) {
	c := mustParseConfig(t, "grpc:\n  listen: \"\"\n  max_concurrent_streams: 4\n  max_connections: 7\n  max_rpcs: 9\n  abuse_penalty: 0s\n", "t.yaml")
	if c.GRPC.Listen != "" || c.GRPC.MaxConcurrentStreams != 4 || c.GRPC.MaxConnections != 7 || c.GRPC.MaxRPCs != 9 || c.GRPC.AbusePenalty.Duration != 0 {
		t.Errorf("parsed %+v", c.GRPC)
	}
	d := mustParseConfig(t, "grpc: {}\n", "t.yaml")
	if d.GRPC.Listen != "127.0.0.1:8001" || d.GRPC.MaxConcurrentStreams != 128 || d.GRPC.MaxConnections != 1000 || d.GRPC.MaxRPCs != 4096 || d.GRPC.AbusePenalty.Duration != time.Second {
		t.Errorf("defaults %+v", d.GRPC)
	}
}

func TestConfigGRPCErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"no port", "grpc:\n  listen: 127.0.0.1\n",
			[]string{`t.yaml:2: grpc.listen: "127.0.0.1" has no port (want host:port, e.g. 127.0.0.1:8001`}},
		{"same as listen", "listen: 127.0.0.1:9000\ngrpc:\n  listen: 127.0.0.1:9000\n",
			[]string{`t.yaml:3: grpc.listen: "127.0.0.1:9000" is also the public or the metrics listen address`}},
		{"same as metrics", "grpc:\n  listen: 127.0.0.1:8002\n",
			[]string{`t.yaml:2: grpc.listen: "127.0.0.1:8002" is also the public or the metrics listen address`}},
		{"no streams", "grpc:\n  max_concurrent_streams: 0\n",
			[]string{`t.yaml:2: grpc.max_concurrent_streams: 0 is out of range (1 to 65536)`}},
		{"no connections", "grpc:\n  max_connections: 0\n",
			[]string{`t.yaml:2: grpc.max_connections: 0 is out of range (1 to 1048576)`}},
		{"no rpcs", "grpc:\n  max_rpcs: 0\n",
			[]string{`t.yaml:2: grpc.max_rpcs: 0 is out of range (1 to 1048576)`}},
		{"long penalty", "grpc:\n  abuse_penalty: 2m\n",
			[]string{`t.yaml:2: grpc.abuse_penalty: 2m0s is out of range (0s, which turns it off, to 1m0s)`}},
		{"unknown key", "grpc:\n  port: 8001\n",
			[]string{`t.yaml:2: unknown key "port" in grpc (known keys: listen, max_concurrent_streams, max_connections, max_rpcs, abuse_penalty)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}
