package supervisor

import (
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

func TestGRPCNeedsAnUpgrade(t *testing.T) {
	for name, change := range map[string]func(*config.Config){
		"listen":  func(c *config.Config) { c.GRPC.Listen = "127.0.0.1:9101" },
		"off":     func(c *config.Config) { c.GRPC.Listen = "" },
		"streams": func(c *config.Config) { c.GRPC.MaxConcurrentStreams = 7 },
		"conns":   func(c *config.Config) { c.GRPC.MaxConnections = 7 },
		"rpcs":    func(c *config.Config) { c.GRPC.MaxRPCs = 7 },
	} {
		cfg := config.DefaultConfig()
		change(cfg)
		if err := reloadable(config.DefaultConfig(), cfg); err == nil || !strings.Contains(err.Error(), "grpc:") {
			t.Errorf("%s: reloadable = %v, want a grpc error", name, err)
		}
	}
}
