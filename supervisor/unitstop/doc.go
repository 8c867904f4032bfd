// Package unitstop checks that systemd gives the master time to stop: a
// service is SIGKILLed once its unit's TimeoutStopSec runs out, so a
// config whose stop bound (config.StopBound: drain_grace, then the
// listener's drain and the workers' stop, each bounded by
// shutdown_timeout) reaches that timeout loses the requests still in
// flight, and nothing else would say so.
//
// The model:
//   - A Source reads the Unit that runs this process: its name and its
//     TimeoutStopUSec. Systemd is the real one (D-Bus); tests fake it.
//   - Compare turns a Unit and a stop bound into a Warning, or nil when the
//     timeout is longer than the bound (or off: TimeoutStopSec=infinity).
//   - A Warning says both figures and the fix: a drop-in raising
//     TimeoutStopSec to Needed(bound), the bound plus Margin.
//
// Systemd reads over D-Bus, not `systemctl show`: systemctl itself talks
// D-Bus, as root to systemd's private socket (/run/systemd/private)
// first, then to the system bus, and Systemd tries the same two in the
// same order (go-systemd's dbus.NewWithContext tries the bus first, and
// spends its whole context on a hung dbus-daemon), so a fallback to
// systemctl would reach nothing more; it would add a fork, a binary that
// must be on PATH, and a formatted time span ("1min 30s") to parse
// instead of the property's microseconds. The unit is the one systemd itself says holds this PID
// (GetUnitByPID, from the cgroup), not a name from the environment, so a
// renamed or templated unit is still found.
//
// Pitfalls for the caller:
//   - Never fail a start over a Warning or a read error: a master that
//     serves with a short timeout is better than one that does not serve.
//   - Outside systemd (no $INVOCATION_ID and no $NOTIFY_SOCKET) Systemd
//     returns ErrNotUnderSystemd at once, without touching D-Bus.
package unitstop
