package unitstop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Margin is what Needed adds to a stop bound: the master's own exit after
// its workers stopped, and the slack `supervisor stop` also allows.
const Margin = 30 * time.Second

// ErrNotUnderSystemd: this process was not started by systemd, so no
// unit's timeout applies.
var ErrNotUnderSystemd = errors.New("not running under systemd")

// Unit is the systemd unit that runs this process.
type Unit struct {
	// Name is the unit's name, e.g. "onnx-supervisor.service".
	Name string
	// TimeoutStop is its TimeoutStopUSec; 0 means none (infinity).
	TimeoutStop time.Duration
}

// Source reads the Unit that runs this process. It returns
// ErrNotUnderSystemd (errors.Is) when there is none.
type Source interface {
	Unit(ctx context.Context) (Unit, error)
}

// fromUSec converts a systemd usec_t; USEC_INFINITY (and 0, which
// TimeoutStopSec=0 also means) is no timeout.
func fromUSec(us uint64) time.Duration {
	if us == math.MaxUint64 || us > math.MaxInt64/uint64(time.Microsecond) {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// Needed is the TimeoutStopSec a unit needs for a config that stops
// within bound, in whole seconds.
func Needed(bound time.Duration) time.Duration {
	return (bound + Margin + time.Second - 1).Truncate(time.Second)
}

// Advice is the comment line `supervisor check` prints: the
// TimeoutStopSec that a stop bound needs.
func Advice(bound time.Duration) string {
	return fmt.Sprintf("# systemd: a stop takes up to %s (drain_grace + 2 × shutdown_timeout): the unit needs TimeoutStopSec=%d or more",
		bound, int64(Needed(bound)/time.Second))
}
