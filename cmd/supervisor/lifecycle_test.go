package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestWorkersDieWithTheMaster(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2})
	st := in.status()
	if err := in.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-in.exited
	// Within 2s of the master's death. The orphans' exit is what counts:
	// reaping them is init's business, and this sandbox's init takes its
	// time.
	start := time.Now()
	pollUntil(t, 2*time.Second, "every worker exits after its master was SIGKILLed", func() bool {
		for _, w := range st.Workers {
			if !processExited(w.PID) {
				return false
			}
		}
		return true
	})
	t.Logf("every worker exited %s after the master was reaped", time.Since(start).Round(time.Millisecond))
}

// TestSIGKILLedWorkersUnderLoad kills a prep and then an infer worker with
// SIGKILL while clients keep sending to pools of two: only requests in
// flight on the killed worker may fail (at most one per client and kill),
// and each pool recovers its worker.
func TestSIGKILLedWorkersUnderLoad(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2, inferWorkers: 2})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	const clients = 4
	l := startLoad(in, clients, "/v2/models/mlp/infer", body)
	l.waitFor(t, 200)
	l.phase.Store(events)
	for _, name := range []string{"prep-0", "infer-0"} {
		var victim int
		for _, w := range in.status().Workers {
			if w.Name == name {
				victim = w.PID
			}
		}
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, 60*time.Second, name+" replaced after SIGKILL", func() bool {
			for _, w := range in.status().Workers {
				if w.Name == name && w.PID != victim && w.State == "ready" {
					return true
				}
			}
			return false
		})
		l.waitFor(t, 100)
	}
	l.finishAllowing(t, "SIGKILL of prep-0 then infer-0", 2*clients)
}

// TestSIGTERMDrainsInFlightRequests keeps clients busy while the master is
// told to stop: every request must end in a 200 or, once the drain told
// its client to close, in a refused connection; never in an error status,
// a cut response or a reset of a request sent to a socket that the
// stopping master would never accept from (internal/listenstop).
func TestSIGTERMDrainsInFlightRequests(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2})
	body := inferBody(t, v2Tensor{"input", "FP32", []int64{4, 3, 224, 224}, seq(4*3*224*224, 1)})
	var ok, connErrs, bad, spanning atomic.Int64
	var termAt atomic.Int64 // unix nanos when SIGTERM was sent; 0 before
	var firstBad atomic.Value
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				start := time.Now().UnixNano()
				code, resp, _, err := in.send(http.MethodPost, "/v2/models/default/infer", body, nil)
				switch {
				case code == http.StatusOK:
					if term := termAt.Load(); term != 0 && start < term {
						spanning.Add(1) // in flight when SIGTERM arrived
					}
					if ok.Add(1) >= 6 {
						once.Do(func() { close(enough) })
					}
				case code == 0 && !errors.Is(err, syscall.ECONNREFUSED):
					bad.Add(1)
					firstBad.CompareAndSwap(nil, err.Error())
					return
				case code == 0:
					connErrs.Add(1)
					if termAt.Load() != 0 {
						return // the listener is closed: this client is done
					}
				default:
					bad.Add(1)
					firstBad.CompareAndSwap(nil, string(resp))
				}
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatal("no steady traffic within 60s")
	}
	termAt.Store(time.Now().UnixNano())
	in.terminate(60 * time.Second)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d requests got an error status or a connection error other than refused during the drain, first: %v", bad.Load(), firstBad.Load())
	}
	if spanning.Load() == 0 {
		t.Fatal("no request was in flight when SIGTERM arrived, so the drain was not exercised")
	}
	t.Logf("%d requests succeeded (%d of them in flight at SIGTERM), %d connection errors after the listener closed",
		ok.Load(), spanning.Load(), connErrs.Load())
}

// TestRecyclingDropsNoRequest recycles prep and infer workers after a few
// requests each while clients keep sending: surge-first replacement must
// not fail a single request.
func TestRecyclingDropsNoRequest(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 2, recycle: "max_requests: 25\n  max_requests_jitter: 5"})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	// Recycling starts with the first requests, so every latency counts
	// as "during events".
	l := startLoad(in, 4, "/v2/models/mlp/infer", body)
	l.phase.Store(events)
	l.waitFor(t, 600)
	l.finish(t, "recycling every ~25 requests")
	// 600 requests through 2 prep workers and 1 infer worker (limits <= 30)
	// must recycle both pools; a replacement may still be booting.
	recycles := map[string]int{}
	pollUntil(t, 60*time.Second, "both pools recycled", func() bool {
		clear(recycles)
		for _, w := range in.status().Workers {
			recycles[w.Role] += w.Recycles
			if w.Restarts != 0 {
				t.Fatalf("worker %s restarted %d times: recycling must not look like a crash", w.Name, w.Restarts)
			}
		}
		return recycles["prep"] > 0 && recycles["infer"] > 0
	})
	t.Logf("recycles by pool: %v", recycles)
}

// TestWorkerThatCannotBootDegradesItsSlot breaks the ONNX Runtime library
// (a symlink) under a running instance and kills one of two infer workers:
// its restarts fail and back off, status and /v2/health/ready name it
// degraded, the other keeps serving, and once the library is back the slot
// recovers on its own. (A broken model file no longer fails a boot: the
// model is unavailable and the worker serves the others; see
// models_test.go.)
func TestWorkerThatCannotBootDegradesItsSlot(t *testing.T) {
	real := needORT(t)
	lib := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.Symlink(real, lib); err != nil {
		t.Fatal(err)
	}
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 2, ortLibrary: lib,
		extra: "workers:\n  restart_backoff: 50ms\n  restart_backoff_max: 200ms\n  degraded_after: 2\n"})
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	var victim int
	for _, w := range in.status().Workers {
		if w.Name == "infer-0" {
			victim = w.PID
		}
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 60*time.Second, "infer-0 degraded in status", func() bool {
		st := in.status()
		return len(st.Degraded) == 1 && st.Degraded[0] == "infer-0"
	})
	code, resp, _ := in.get("/v2/health/ready")
	if code != http.StatusOK || !strings.Contains(string(resp), `"degraded":["infer-0"]`) {
		t.Fatalf("ready with infer-1 serving and infer-0 degraded: %d %s", code, resp)
	}
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	for range 20 {
		if code, resp, _ := in.post("/v2/models/mlp/infer", body, nil); code != http.StatusOK {
			t.Fatalf("infer-1 should keep serving: %d %s", code, resp)
		}
	}
	if err := os.Symlink(real, lib); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 60*time.Second, "infer-0 recovers once the library loads again", func() bool {
		st := in.status()
		return len(st.Degraded) == 0 && st.Workers[0].State == "ready"
	})
	if code, resp, _ := in.get("/v2/health/ready"); code != http.StatusOK || len(resp) != 0 {
		t.Fatalf("ready after recovery: %d %s", code, resp)
	}
}

// TestSIGTERMWaitsForSlowRequests holds four requests in the batcher for
// 1.5s each (max_queue_delay), sends SIGTERM once all four are queued, and
// expects every one to complete with 200 before the master exits cleanly.
func TestSIGTERMWaitsForSlowRequests(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1,
		batching: map[string]string{"mlp": "{max_batch_size: 8, max_queue_delay: 1500ms}"}})
	body := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	const slow = 4
	codes := make(chan int, slow)
	for range slow {
		go func() {
			code, _, _ := in.post("/v2/models/mlp/infer", body, nil)
			codes <- code
		}()
	}
	pollUntil(t, 10*time.Second, "four requests queued in the batcher", func() bool {
		_, stats, _ := in.get("/v2/models/mlp/stats")
		return strings.Contains(string(stats), fmt.Sprintf(`"queue_depth":%d`, slow))
	})
	start := time.Now()
	in.terminate(30 * time.Second)
	for range slow {
		if code := <-codes; code != http.StatusOK {
			t.Fatalf("a request in flight at SIGTERM got %d, want 200", code)
		}
	}
	t.Logf("SIGTERM with %d slow requests in flight: all completed; the master exited after %s", slow, time.Since(start).Round(time.Millisecond))
}
