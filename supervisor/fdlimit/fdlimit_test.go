package fdlimit

import (
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// TestCheck: a limit at the need passes, one below it warns with the
// numbers and the unit's fix.
func TestCheck(t *testing.T) {
	b := Budget{PublicConns: 1000, GRPCConns: 100, Upstream: 500, Workers: 4}
	need := uint64(1000 + 100 + 500 + 2*4*perWorker + own)
	if b.Need() != need {
		t.Fatalf("Need = %d, want %d", b.Need(), need)
	}
	if w := Check(b, need); w != nil {
		t.Errorf("Check at the need = %v, want nil", w)
	}
	w := Check(b, 1024)
	if w == nil {
		t.Fatal("Check below the need = nil, want a warning")
	}
	for _, s := range []string{"is 1024", "1000", "grpc.max_connections 100", "500", "LimitNOFILE=" + strconv.FormatUint(need, 10)} {
		if !strings.Contains(w.String(), s) {
			t.Errorf("the warning lacks %q: %s", s, w)
		}
	}
}

// TestForConfig: gRPC counts only when it listens, and with no
// max_in_flight every client's request may wait on a worker.
func TestForConfig(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Limits.MaxConnections, cfg.Limits.MaxInFlight = 100, 0
	cfg.GRPC.Listen, cfg.GRPC.MaxConnections, cfg.GRPC.MaxRPCs = "127.0.0.1:1", 10, 20
	if got, want := ForConfig(cfg, 3), (Budget{PublicConns: 100, GRPCConns: 10, Upstream: 120, Workers: 3}); got != want {
		t.Errorf("ForConfig = %+v, want %+v", got, want)
	}
	cfg.GRPC.Listen, cfg.Limits.MaxInFlight = "", 50
	if got, want := ForConfig(cfg, 3), (Budget{PublicConns: 100, Upstream: 50, Workers: 3}); got != want {
		t.Errorf("ForConfig without gRPC = %+v, want %+v", got, want)
	}
}
