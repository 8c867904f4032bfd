package supervisor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/logtest"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/unitstop"
)

// fakeUnit is a systemd unit with a fixed TimeoutStopSec, or an error.
type fakeUnit struct {
	timeout time.Duration
	err     error
}

func (f *fakeUnit) Unit(context.Context) (unitstop.Unit, error) {
	return unitstop.Unit{Name: "supervisor.service", TimeoutStop: f.timeout}, f.err
}

// TestStopTimeoutWarning: a config whose stop bound reaches the unit's
// TimeoutStopSec gets a warning in the log, in status and in STATUS=;
// one the unit covers (after a drop-in and a reload), or no unit at all,
// clears it.
func TestStopTimeoutWarning(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.DrainGrace.Duration = 10 * time.Second
	cfg.ShutdownTimeout.Duration = time.Minute // configs/gpu-host.yaml: 130s
	unit := &fakeUnit{timeout: 90 * time.Second}
	var logs logtest.Buffer
	m := New(cfg, zerolog.New(&logs), Options{Host: fakeHost(t, "vm2", "", 0), Unit: unit})

	m.checkStopTimeout(cfg)
	ws := m.warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "TimeoutStopSec=1m30s") || !strings.Contains(ws[0], "TimeoutStopSec=160") {
		t.Fatalf("warnings = %q, want one naming TimeoutStopSec=1m30s and the fix TimeoutStopSec=160", ws)
	}
	if !strings.Contains(logs.String(), `"needed_timeout_stop_sec":160`) || !strings.Contains(logs.String(), "systemctl edit supervisor.service") {
		t.Errorf("the log lacks the warning with its fix:\n%s", logs.String())
	}
	if line := m.statusLine(); !strings.Contains(line, "WARNING: TimeoutStopSec=1m30s is below the stop bound 2m10s") {
		t.Errorf("STATUS= line %q lacks the warning", line)
	}

	unit.timeout = 160 * time.Second // systemctl edit, then systemctl reload
	m.checkStopTimeout(cfg)
	if ws := m.warnings(); ws != nil || strings.Contains(m.statusLine(), "WARNING") {
		t.Errorf("after TimeoutStopSec=160: warnings %q, STATUS %q; want none", ws, m.statusLine())
	}

	unit.timeout, unit.err = 90*time.Second, errors.New("no bus")
	m.checkStopTimeout(cfg)
	if ws := m.warnings(); ws != nil {
		t.Errorf("with the unit unreadable: warnings %q, want none", ws)
	}
	if !strings.Contains(logs.String(), "could not read the unit's TimeoutStopSec") {
		t.Errorf("an unreadable unit is not logged:\n%s", logs.String())
	}
}
