package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A reload's new prep worker asks the infer workers for their models
// while the host is too busy for them to answer in one fetch's bound:
// infer-0 is SIGSTOPped through the reload until the new prep worker
// says it waits for it, then SIGCONTed. The reload succeeds (it failed
// with "GET /metadata: fasthttp: timeout" when the boot asked once), and
// the new prep worker serves.
func TestReloadPrepBootWaitsForAStoppedInferWorker(t *testing.T) {
	in := startInstance(t, options{modelNames: []string{"mlp"}, prepWorkers: 1, inferWorkers: 1,
		prepSection: "max_decode_bytes: 64MiB",
		// infer-0 is stopped for a few seconds: not long enough to be hung.
		extra: "workers:\n  heartbeat_timeout: 60s\n"})
	before := in.status().Generation
	prep := workerNamed(t, in, "prep-0").PID
	infer := workerNamed(t, in, "infer-0").PID
	stopProcess(t, infer)
	continued := false
	defer func() {
		if !continued {
			sendSignal(t, infer, syscall.SIGCONT)
		}
	}()
	cfg, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, in, strings.Replace(string(cfg), "max_decode_bytes: 64MiB", "max_decode_bytes: 65MiB", 1))
	reloaded := make(chan error, 1)
	go func() {
		out, err := in.cli("reload")
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		reloaded <- err
	}()
	waiting := regexp.MustCompile(`"worker":"prep-0".*waiting for an infer worker to answer`)
	pollUntil(t, 60*time.Second, "the new prep-0 waits for infer-0", func() bool {
		select {
		case err := <-reloaded:
			t.Fatalf("the reload ended (%v) while infer-0 was stopped", err)
		default:
		}
		return waiting.MatchString(in.log.String())
	})
	sendSignal(t, infer, syscall.SIGCONT)
	continued = true
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the reload did not end within 90s of infer-0 continuing")
	}
	if g := in.status().Generation; g != before+1 {
		t.Fatalf("generation %d after the reload, want %d", g, before+1)
	}
	if w := workerNamed(t, in, "prep-0"); w.PID == prep || w.State != "ready" {
		t.Fatalf("prep-0 after the reload: pid %d (was %d), %s; want a new, ready one", w.PID, prep, w.State)
	}
	if err := httpInfersMLP(in); err != nil {
		t.Fatal(err)
	}
}

// prep-0 killed while infer-0 is down: infer-0 is SIGKILLed, its
// replacement SIGSTOPped as soon as it is spawned (so that no infer
// worker serves), then prep-0 is SIGKILLed. The master waits for an
// infer worker before it spawns prep-0 again, instead of spawning it
// with no infer socket to fail its boot at error level ("no infer worker
// sockets in the spec"), and prep-0 boots once infer-0 is SIGCONTed.
// Only the two exits are error lines.
func TestPrepRespawnWaitsForItsInferWorker(t *testing.T) {
	in := startInstance(t, options{modelNames: []string{"mlp"}, prepWorkers: 1, inferWorkers: 1})
	oldInfer, oldPrep := workerNamed(t, in, "infer-0").PID, workerNamed(t, in, "prep-0").PID
	sendSignal(t, oldInfer, syscall.SIGKILL)
	next := spawnedPID(t, in, "infer-0", oldInfer)
	stopProcess(t, next)
	defer sendSignal(t, next, syscall.SIGCONT)
	if w := workerNamed(t, in, "infer-0"); w.State == "ready" {
		t.Skipf("infer-0 (pid %d) was ready before it could be stopped: the scenario did not happen", next)
	}
	sendSignal(t, oldPrep, syscall.SIGKILL)
	waits := regexp.MustCompile(`"worker":"prep-0".*no infer worker serves yet|"worker":"prep-0".*worker failed to boot`)
	pollUntil(t, 60*time.Second, "prep-0 waits for infer-0, or fails", func() bool { return waits.MatchString(in.log.String()) })
	sendSignal(t, next, syscall.SIGCONT)
	for name, pid := range map[string]int{"infer-0": oldInfer, "prep-0": oldPrep} {
		pollUntil(t, 60*time.Second, fmt.Sprintf("%s restarted (was pid %d)", name, pid), func() bool {
			w := workerNamed(t, in, name)
			return w.PID != 0 && w.PID != pid && w.State == "ready"
		})
	}
	in.waitReady(30 * time.Second)
	if err := httpInfersMLP(in); err != nil {
		t.Fatal(err)
	}
	exited := regexp.MustCompile(`"message":"worker exited unexpectedly; restarting"`)
	for _, line := range strings.Split(in.log.String(), "\n") {
		if strings.Contains(line, `"level":"error"`) && !exited.MatchString(line) {
			t.Errorf("error line: %s", line)
		}
	}
}

// spawnedPID is the pid of the worker name the master spawns after old,
// read from the master's "worker spawned" line as soon as it is written
// (a busy loop bounded at 30s: the worker may be ready within 100ms).
func spawnedPID(t *testing.T, in *instance, name string, old int) int {
	t.Helper()
	spawned := regexp.MustCompile(`"worker":"` + name + `","pid":(\d+),[^\n]*"message":"worker spawned"`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range spawned.FindAllStringSubmatch(in.log.String(), -1) {
			if pid, _ := strconv.Atoi(m[1]); pid != old && pid != 0 {
				return pid
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no %s spawned after pid %d within 30s", name, old)
	return 0
}
