package supervisor

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/logtest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/fdlimit"
)

// TestFDLimitWarning: a config whose connection limits exceed this
// process's open-file limit gets a warning in the start log with both
// numbers and the unit's fix; one within it logs nothing.
func TestFDLimitWarning(t *testing.T) {
	limit, err := fdlimit.Limit()
	if err != nil {
		t.Skip(err)
	}
	cfg := config.DefaultConfig()
	cfg.Planned = &affinity.Placement{}
	cfg.Limits.MaxConnections = int(limit) // with the rest, over the limit
	var logs logtest.Buffer
	m := New(cfg, zerolog.New(&logs), Options{Host: fakeHost(t, "vm2", "", 0)})
	m.checkFDLimit(cfg)
	for _, s := range []string{`"level":"warn"`, `"nofile":`, "LimitNOFILE="} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("the start log lacks %s:\n%s", s, logs.String())
		}
	}
	var quiet logtest.Buffer
	m.log = zerolog.New(&quiet)
	cfg.Limits.MaxConnections, cfg.Limits.MaxInFlight, cfg.GRPC.Listen = 1, 1, ""
	m.checkFDLimit(cfg)
	if limit > 1024 && quiet.String() != "" {
		t.Errorf("a config of 1 connection logged %s", quiet.String())
	}
}
