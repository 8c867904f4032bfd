package supervisor

import (
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// TestTracingNeedsAnUpgrade: a reload that changes the tracing section is
// refused (each process's exporter starts with it); one that leaves it
// alone is not.
func TestTracingNeedsAnUpgrade(t *testing.T) {
	for name, change := range map[string]func(*config.Config){
		"endpoint": func(c *config.Config) { c.Tracing.Endpoint = "127.0.0.1:4317" },
		"rate":     func(c *config.Config) { c.Tracing.Rate = 7 },
		"queue":    func(c *config.Config) { c.Tracing.QueueSize = 7 },
	} {
		cfg := config.DefaultConfig()
		change(cfg)
		if err := reloadable(config.DefaultConfig(), cfg); err == nil || !strings.Contains(err.Error(), "tracing:") {
			t.Errorf("%s: reloadable = %v, want a tracing error", name, err)
		}
	}
	if err := reloadable(config.DefaultConfig(), config.DefaultConfig()); err != nil {
		t.Errorf("an unchanged config: %v", err)
	}
	if tracingConfig(config.DefaultConfig()) != nil {
		t.Error("the default config has a tracing exporter: tracing must be off by default")
	}
}
