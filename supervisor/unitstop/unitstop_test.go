package unitstop

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// fakeSource is a unit with a fixed TimeoutStopSec, or an error.
type fakeSource struct {
	unit Unit
	err  error
}

func (f fakeSource) Unit(context.Context) (Unit, error) { return f.unit, f.err }

var _ Source = fakeSource{}

// check is what the master does with a Source: read, then compare.
func check(t *testing.T, src Source, bound time.Duration) *Warning {
	t.Helper()
	u, err := src.Unit(context.Background())
	if err != nil {
		t.Fatalf("Unit: %v", err)
	}
	return Compare(u, bound)
}

func TestCompare(t *testing.T) {
	const unit = "supervisor.service"
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		bound   time.Duration
		warn    bool
	}{
		{"default config, packaged unit", 90 * time.Second, 60 * time.Second, false},
		{"gpu-host config, packaged unit", 90 * time.Second, 130 * time.Second, true},
		{"timeout equal to the bound", 130 * time.Second, 130 * time.Second, true},
		{"raised by a drop-in", 160 * time.Second, 130 * time.Second, false},
		{"TimeoutStopSec=infinity", 0, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := check(t, fakeSource{unit: Unit{Name: unit, TimeoutStop: tc.timeout}}, tc.bound)
			if (w != nil) != tc.warn {
				t.Fatalf("Compare(TimeoutStopSec=%s, bound %s) = %v, want a warning: %v", tc.timeout, tc.bound, w, tc.warn)
			}
		})
	}
}

func TestWarningMessages(t *testing.T) {
	w := check(t, fakeSource{unit: Unit{Name: "supervisor.service", TimeoutStop: 90 * time.Second}}, 130*time.Second)
	if w == nil {
		t.Fatal("no warning for TimeoutStopSec=90s under a 130s stop bound")
	}
	long := w.String()
	for _, want := range []string{"supervisor.service has TimeoutStopSec=1m30s", "stop takes up to 2m10s",
		"SIGKILL", "`systemctl edit supervisor.service`", `"[Service]"`, `"TimeoutStopSec=160"`,
		"`systemctl reload supervisor.service`"} {
		if !strings.Contains(long, want) {
			t.Errorf("String() = %q, want it to contain %q", long, want)
		}
	}
	short := w.Short()
	if !strings.Contains(short, "TimeoutStopSec=1m30s") || !strings.Contains(short, "2m10s") ||
		!strings.Contains(short, "raise it to 160") || strings.Contains(short, "\n") {
		t.Errorf("Short() = %q, want both figures and the fix on one line", short)
	}
}

func TestNeededRoundsUpToSeconds(t *testing.T) {
	for bound, want := range map[time.Duration]time.Duration{
		130 * time.Second:                     160 * time.Second,
		60*time.Second + 500*time.Millisecond: 91 * time.Second,
		0:                                     Margin,
	} {
		if got := Needed(bound); got != want {
			t.Errorf("Needed(%s) = %s, want %s", bound, got, want)
		}
	}
	if a := Advice(130 * time.Second); !strings.HasPrefix(a, "# ") || !strings.Contains(a, "TimeoutStopSec=160") {
		t.Errorf("Advice(130s) = %q, want a YAML comment naming TimeoutStopSec=160", a)
	}
}

func TestFromUSec(t *testing.T) {
	for us, want := range map[uint64]time.Duration{
		90_000_000:     90 * time.Second,
		math.MaxUint64: 0, // USEC_INFINITY
		0:              0,
		math.MaxInt64:  0, // beyond a Duration
	} {
		if got := fromUSec(us); got != want {
			t.Errorf("fromUSec(%d) = %s, want %s", us, got, want)
		}
	}
}

func TestSystemdOutsideSystemd(t *testing.T) {
	s := Systemd{Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := s.Unit(ctx); !errors.Is(err, ErrNotUnderSystemd) {
		t.Fatalf("Unit() without INVOCATION_ID or NOTIFY_SOCKET = %v, want ErrNotUnderSystemd", err)
	}
}
