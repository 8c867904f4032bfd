package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// TestInferKillKeepsArenaSlots is issue 13's check of fault isolation: MLP
// on one prep and one infer worker with the shared-memory handoff, 32
// clients, and the infer worker SIGKILLed 3 times. Requests in flight on
// it, and those that arrive while it reboots, may fail; but none may keep
// an arena slot, so 1s after each replacement reports ready, 100
// consecutive requests all succeed (the 32 clients going on meanwhile),
// and once the clients stop no slot is in use. ARENA_KILLS scales the
// kill count.
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
		failedBefore, reasonsBefore := l.failed.Load(), l.failures()
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
				t.Fatalf("kill %d: request %d of 100, 1s after infer-0 (pid %d) was ready: %d %s",
					k, i+1, replacement, code, resp)
			}
		}
		if n := l.failed.Load() - failedAt; n != 0 {
			t.Fatalf("kill %d: %d of the 32 clients' requests failed after full service (first failure overall: %v)", k, n, l.first.Load())
		}
		recovered := time.Unix(0, l.lastBad.Load()).Sub(killed)
		reasons := l.failures()
		for r, n := range reasonsBefore {
			reasons[r] -= n
		}
		t.Logf("kill %d: infer-0 %d -> %d ready after %s; %d requests failed %v, the last %s after the kill (full service from then on)",
			k, victim.PID, replacement, ready.Sub(killed).Round(time.Millisecond), failedAt-failedBefore, reasons, max(recovered, 0).Round(time.Millisecond))
	}
	l.finishAllowing(t, "infer kills", l.failed.Load())
	// Every slot comes back: none stays with a dead infer worker.
	pollUntil(t, 10*time.Second, "no arena slot in use once the clients stopped", func() bool { return arenaStatus(t, in).InUse == 0 })
	a := arenaStatus(t, in)
	t.Logf("arena after the kills: %d/%d slots in use, %d requests turned away for want of a slot", a.InUse, a.Slots, a.TurnedAway)
}

// arenaStatus is prep-0's arena as /status.json reports it.
func arenaStatus(t *testing.T, in *instance) status.ArenaRow {
	t.Helper()
	resp, err := httpClient.Get(in.metricsURL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r status.Report
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/status.json: %v", err)
	}
	for _, p := range r.Processes {
		if p.Name == "prep-0" && !p.Stale && p.Arena != nil {
			return *p.Arena
		}
	}
	t.Fatalf("/status.json has no arena for prep-0: %+v", r.Processes)
	return status.ArenaRow{}
}

// TestFullArenaIsVisible: an infer worker that stops (SIGSTOP, too
// briefly for the heartbeat timeout) holds the only slot of a 1-slot
// arena. Requests are turned away (503), /metrics and `supervisor status`
// show the arena full, and after 3s /v2/health/ready answers 503 naming
// the arena; when the infer worker goes on, all of it clears.
func TestFullArenaIsVisible(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 1,
		prepSection: "handoff: shm\n  arena_slots: 1\n  upstream_timeout: 30s",
		extra:       "workers:\n  heartbeat_timeout: 60s\n"})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
		t.Fatalf("before: %d %s", code, resp)
	}
	infer := workerNamed(t, in, "infer-0")
	resumed := false
	defer func() {
		if !resumed {
			syscall.Kill(infer.PID, syscall.SIGCONT)
		}
	}()
	stopProcess(t, infer.PID) // before the request goes, or it may still be answered
	held := make(chan int, 1)
	go func() { // holds the only slot until the infer worker goes on
		code, _, _ := in.post("/v2/models/mlp/infer", body, nil)
		held <- code
	}()
	pollUntil(t, 30*time.Second, "the arena full", func() bool { a := arenaStatus(t, in); return a.InUse == a.Slots })
	if code, resp, hdr := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Fatalf("a request while the arena is full: %d %s (Retry-After %q), want 503 with Retry-After", code, resp, hdr.Get("Retry-After"))
	}
	pollUntil(t, 30*time.Second, "/v2/health/ready 503 naming the arena", func() bool {
		code, resp, _ := in.get("/v2/health/ready")
		return code == http.StatusServiceUnavailable && strings.Contains(string(resp), "arena has been full")
	})
	_, metrics, _ := doURL(t, in.metricsURL+"/metrics")
	for _, want := range []string{`supervisor_arena_slots_in_use{worker="prep-0"`, `supervisor_arena_full_total{worker="prep-0"`} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("/metrics has no %s", want)
		}
	}
	if a := arenaStatus(t, in); a.TurnedAway == 0 || a.FullS < 3 {
		t.Fatalf("status arena %+v: want requests turned away and full for over 3s", a)
	}
	out, err := in.cli("status")
	if err != nil || !strings.Contains(out, "ARENA") || !strings.Contains(out, "1/1") || !strings.Contains(out, "arena full") {
		t.Fatalf("supervisor status does not show the full arena (%v):\n%s", err, out)
	}

	sendSignal(t, infer.PID, syscall.SIGCONT)
	resumed = true
	if code := <-held; code != http.StatusOK {
		t.Fatalf("the request that held the slot: %d, want 200 once the infer worker went on", code)
	}
	in.waitReady(30 * time.Second)
	if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
		t.Fatalf("after: %d %s", code, resp)
	}
}

func doURL(t *testing.T, url string) (int, []byte, http.Header) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}
