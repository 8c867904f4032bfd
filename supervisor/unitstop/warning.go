package unitstop

import (
	"fmt"
	"time"
)

// Warning is a unit whose TimeoutStopSec does not cover the stop bound:
// systemd would SIGKILL the master in the middle of its drain.
type Warning struct {
	Unit  Unit
	Bound time.Duration
}

// Compare returns a Warning when u's timeout is set and not longer than
// bound, else nil.
func Compare(u Unit, bound time.Duration) *Warning {
	if u.TimeoutStop == 0 || u.TimeoutStop > bound {
		return nil
	}
	return &Warning{Unit: u, Bound: bound}
}

// Needed is the TimeoutStopSec that fixes the warning.
func (w *Warning) Needed() time.Duration { return Needed(w.Bound) }

// String says what is wrong, what it costs and the fix, for the log and
// `supervisor status`.
func (w *Warning) String() string {
	return fmt.Sprintf("%s has TimeoutStopSec=%s but this config's stop takes up to %s (drain_grace + 2 × shutdown_timeout): "+
		"systemd would SIGKILL the master mid-drain and lose the requests in flight; "+
		"fix: `systemctl edit %s`, add \"[Service]\" and \"TimeoutStopSec=%d\", then `systemctl reload %s` to clear this warning",
		w.Unit.Name, w.Unit.TimeoutStop, w.Bound, w.Unit.Name, int64(w.Needed()/time.Second), w.Unit.Name)
}

// Short is the warning in a few words, for systemd's STATUS= line.
func (w *Warning) Short() string {
	return fmt.Sprintf("WARNING: TimeoutStopSec=%s is below the stop bound %s, raise it to %d (see supervisor status)",
		w.Unit.TimeoutStop, w.Bound, int64(w.Needed()/time.Second))
}
