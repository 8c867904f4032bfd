package main

import (
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// TestChaos keeps clients busy while, at random, prep and infer workers
// are SIGKILLed, the master gets SIGHUP, and a worker is SIGSTOPped for
// longer than the heartbeat timeout. Every request must end in a response
// or a connection error (the client's own timeout would mean one was lost
// silently); only requests in flight on a worker that died may fail, so
// failures are bounded by clients per killing event and are 502, 503 or
// 504. CHAOS_EVENTS and CHAOS_SEED scale it up (scripts/chaos).
func TestChaos(t *testing.T) {
	rounds, seed := envInt("CHAOS_EVENTS", 8), uint64(envInt("CHAOS_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 0))
	in := startInstance(t, options{prepWorkers: 2, inferWorkers: 2,
		extra: "workers:\n  heartbeat_timeout: 1s\n  restart_backoff: 50ms\n  restart_backoff_max: 500ms\n"})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	const clients = 4
	l := startLoad(in, clients, "/v2/models/mlp/infer", body)
	l.waitFor(t, 100)
	l.phase.Store(events)

	killing := 0 // events after which in-flight requests may fail
	counts := map[string]int{}
	for range rounds {
		st := in.status()
		victim := st.Workers[rng.IntN(len(st.Workers))]
		switch kind := []string{"SIGKILL", "SIGKILL", "SIGHUP", "SIGSTOP"}[rng.IntN(4)]; kind {
		case "SIGKILL":
			killing++
			counts["SIGKILL "+victim.Role]++
			sendSignal(t, victim.PID, syscall.SIGKILL)
		case "SIGSTOP":
			// The master stops hearing from it and kills it.
			killing++
			counts["SIGSTOP "+victim.Role]++
			sendSignal(t, victim.PID, syscall.SIGSTOP)
		case "SIGHUP":
			counts["SIGHUP"]++
			sendSignal(t, in.cmd.Process.Pid, syscall.SIGHUP)
			victim.PID = 0 // nothing to replace
		}
		pollUntil(t, 60*time.Second, "every worker ready, the victim replaced, a reload answered", func() bool {
			now := in.status()
			if reloads(now) < counts["SIGHUP"] {
				return false
			}
			for _, w := range now.Workers {
				if w.State != "ready" || w.PID == victim.PID {
					return false
				}
			}
			return true
		})
		l.waitFor(t, 50)
	}
	failures := l.failures()
	t.Logf("chaos (seed %d): events %v; %d requests sent, %d failed by reason %v", seed, counts, l.sent.Load(), l.failed.Load(), failures)
	for reason := range failures {
		switch reason {
		case "502", "503", "504":
		default:
			t.Errorf("%d requests failed with %s: only requests in flight on a dying worker may fail (502/503/504)", failures[reason], reason)
		}
	}
	l.finishAllowing(t, "chaos", int64(clients*killing))
}

// reloads counts the reloads the master has finished: the generation
// goes up by one per successful reload.
func reloads(st control.Status) int { return int(st.Generation - 1) }

func sendSignal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill -%d %d: %v", sig, pid, err)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
