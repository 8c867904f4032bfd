package fdlimit

import (
	"fmt"
	"syscall"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// perWorker is the master's descriptors per worker besides its requests'
// upstream connections: stdout and stderr pipes, the process's pidfd, and
// the idle keep-alive connections of its pool, rounded up.
const perWorker = 8

// own is the master's descriptors that no limit counts: stdio, the
// listeners, the control socket, the scoreboard, epoll instances, Go's
// runtime.
const own = 64

// Budget is what a config lets the master have open at once.
type Budget struct {
	PublicConns int // limits.max_connections
	GRPCConns   int // grpc.max_connections; 0 when gRPC is off
	Upstream    int // requests waiting on a worker: limits.max_in_flight, or every client's when it is 0
	Workers     int // the most workers at once, before a surge
}

// ForConfig is cfg's budget with workers workers (the placement's, with
// an autoscaled prep pool at its ceiling).
func ForConfig(cfg *config.Config, workers int) Budget {
	b := Budget{PublicConns: cfg.Limits.MaxConnections, Upstream: cfg.Limits.MaxInFlight, Workers: workers}
	grpcRPCs := 0
	if cfg.GRPC.Listen != "" {
		b.GRPCConns, grpcRPCs = cfg.GRPC.MaxConnections, cfg.GRPC.MaxRPCs
	}
	if b.Upstream == 0 { // no cap: every client's request may wait at once
		b.Upstream = b.PublicConns + grpcRPCs
	}
	return b
}

// ForPlan is cfg's budget with the workers of plan (cfg's placement),
// an autoscaled prep pool counted at its ceiling (prep.max_workers).
func ForPlan(cfg *config.Config, plan *affinity.Placement) Budget {
	return ForConfig(cfg, len(plan.Workers)-cfg.Prep.Workers+cfg.Prep.Ceiling())
}

// Need is the descriptors b may hold at once, workers counted twice (a
// surge-first replacement of every worker).
func (b Budget) Need() uint64 {
	return uint64(b.PublicConns+b.GRPCConns+b.Upstream) + uint64(2*b.Workers*perWorker+own)
}

// A Warning is a limit below a budget's need.
type Warning struct {
	Budget
	Limit uint64
}

// Check returns a Warning when limit is below b's need, or nil.
func Check(b Budget, limit uint64) *Warning {
	if limit >= b.Need() {
		return nil
	}
	return &Warning{Budget: b, Limit: limit}
}

// String says what falls short, by how much, and the fix.
func (w *Warning) String() string {
	return fmt.Sprintf("the open-file limit (RLIMIT_NOFILE) is %d, below the %d descriptors this config may need at once "+
		"(limits.max_connections %d + grpc.max_connections %d + %d requests waiting on workers (limits.max_in_flight) + about %d for %d workers, a reload's replacements and the master's own): "+
		"beyond it connections fail (EMFILE). Set LimitNOFILE=%d or more in the unit (systemctl edit onnx-supervisor), or ulimit -n, or lower those limits",
		w.Limit, w.Need(), w.PublicConns, w.GRPCConns, w.Upstream, 2*w.Workers*perWorker+own, w.Workers, w.Need())
}

// Limit is the process's soft RLIMIT_NOFILE (getrlimit(2)), which Go has
// raised to the hard one at start.
func Limit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("could not read RLIMIT_NOFILE: %w", err)
	}
	return r.Cur, nil
}

// CheckProcess is Check against this process's Limit.
func CheckProcess(b Budget) (*Warning, error) {
	limit, err := Limit()
	if err != nil {
		return nil, err
	}
	return Check(b, limit), nil
}
