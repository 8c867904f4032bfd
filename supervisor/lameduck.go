package supervisor

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/supervisor-dev/supervisor/supervisor/phase"
)

// lameDuck is the first stage of a stop (SIGTERM, SIGINT, `supervisor
// stop`): for drain_grace the master keeps serving every route while
// /v2/health/ready (and gRPC ServerReady) answers 503, so that health
// checking load balancers and Kubernetes endpoints withdraw the host
// before its listener closes; the drain (drainFront) follows. Reloads,
// upgrades and repository changes that begin now are refused
// (workers.ErrStopping): stop wins. It is skipped when drain_grace is 0, after an
// upgrade handed over (the new master serves the same listener), when the
// master never became ready, and when the group ends for another reason
// (quit). A second SIGTERM/SIGINT or `supervisor stop` ends it early, as
// a second signal does for nginx and Envoy. systemd's watchdog is still
// fed (watchdog, nil without one): a grace may be longer than WatchdogSec.
func (m *Master) lameDuck(quit <-chan struct{}, watchdog <-chan time.Time) {
	grace := m.cfg().DrainGrace.Duration
	if grace <= 0 || closed(quit) {
		return
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(again)
	if _, _, err := m.phase.Move(phase.ToLameDuck); err != nil {
		return // not ready (starting), or handed over: no grace
	}
	notify(daemon.SdNotifyStopping, "STATUS=lame duck: /v2/health/ready answers 503 for drain_grace, then draining")
	m.log.Info().Dur("drain_grace", grace).Msg("stopping: lame duck, ready answers 503 while requests are still served")
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case sig := <-again:
			m.log.Info().Str("signal", sig.String()).Msg("second stop signal: skipping the rest of drain_grace")
			return
		case <-m.skipGrace:
			m.log.Info().Msg("second stop request: skipping the rest of drain_grace")
			return
		case <-quit:
			return
		case <-watchdog:
			notify(daemon.SdNotifyWatchdog)
		}
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
