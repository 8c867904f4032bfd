package main

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor"
)

// TestInferKillKeepsArenaSlots is issue 13's check of fault isolation: MLP
// on one prep and one infer worker with the shared-memory handoff, 32
// clients, and the infer worker SIGKILLed 3 times. Requests in flight on
// it, and those that arrive while it reboots, may fail; but none may keep
// an arena slot, so 1s after each replacement reports ready, 100
// consecutive requests all succeed (the 32 clients going on meanwhile),
// and the arena is not full. ARENA_KILLS scales the kill count.
func TestInferKillKeepsArenaSlots(t *testing.T) {
	kills := envInt("ARENA_KILLS", 3)
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 1, prepSection: "handoff: shm"})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	const clients = 32
	l := startLoad(in, clients, "/v2/models/mlp/infer", body)
	l.waitFor(t, 200)
	l.phase.Store(events)
	for k := 1; k <= kills; k++ {
		victim := workerNamed(t, in, "infer-0")
		failedBefore := l.failed.Load()
		killed := time.Now()
		sendSignal(t, victim.PID, syscall.SIGKILL)
		var replacement int
		pollUntil(t, 90*time.Second, "infer-0 replaced and ready", func() bool {
			w := workerNamed(t, in, "infer-0")
			replacement = w.PID
			return w.State == "ready" && w.PID != victim.PID && w.PID != 0
		})
		ready := time.Now()
		<-time.After(time.Second) // the bound: full service 1s after ready
		failedAt := l.failed.Load()
		for i := range 100 {
			if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
				t.Fatalf("kill %d: request %d of 100, 1s after infer-0 (pid %d) was ready: %d %s\narena: %+v",
					k, i+1, replacement, code, resp, arenaStatus(t, in))
			}
		}
		if n := l.failed.Load() - failedAt; n != 0 {
			t.Fatalf("kill %d: %d of the 32 clients' requests failed after full service (first failure overall: %v)", k, n, l.first.Load())
		}
		recovered := time.Unix(0, l.lastBad.Load()).Sub(killed)
		t.Logf("kill %d: infer-0 %d -> %d ready after %s; %d requests failed, the last %s after the kill",
			k, victim.PID, replacement, ready.Sub(killed).Round(time.Millisecond), failedAt-failedBefore, max(recovered, 0).Round(time.Millisecond))
	}
	l.finishAllowing(t, "infer kills", l.failed.Load())
	if a := arenaStatus(t, in); a.InUse >= a.Slots {
		t.Fatalf("arena full after the load stopped: %+v", a)
	}
}

// arenaStatus is prep-0's arena as /status.json reports it.
func arenaStatus(t *testing.T, in *instance) supervisor.ArenaRow {
	t.Helper()
	resp, err := httpClient.Get(in.metricsURL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r supervisor.Report
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/status.json: %v", err)
	}
	for _, p := range r.Processes {
		if p.Name == "prep-0" && !p.Stale && p.Arena != nil {
			return *p.Arena
		}
	}
	t.Fatalf("/status.json has no arena for prep-0: %+v", r.Processes)
	return supervisor.ArenaRow{}
}
