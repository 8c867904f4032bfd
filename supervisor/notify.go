package supervisor

import (
	"fmt"
	"strings"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// notify sends lines to systemd's notification socket ($NOTIFY_SOCKET);
// without one (not under systemd) it does nothing.
func notify(lines ...string) {
	_, _ = daemon.SdNotify(false, strings.Join(lines, "\n"))
}

// notifyReloading tells systemd a reload started. Type=notify-reload wants
// the CLOCK_MONOTONIC time with it, so that it can tell this reload from
// an earlier one.
func notifyReloading() {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	notify(daemon.SdNotifyReloading, fmt.Sprintf("MONOTONIC_USEC=%d", ts.Nano()/1000), "STATUS=reloading the config")
}

// statusLine is the STATUS= line systemctl status shows while serving,
// ending with the stop timeout's warning if there is one.
func (m *Master) statusLine() string {
	line := fmt.Sprintf("STATUS=serving on %s: %d prep, %d infer workers, generation %d",
		m.cfg().Listen, len(m.prep.list()), len(m.infer.list()), m.generation.Load())
	if w := m.stopWarning.Load(); w != nil {
		line += "; " + w.Short()
	}
	return line
}
