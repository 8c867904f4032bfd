package main

import (
	"net/http"
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
	for _, w := range st.Workers {
		// Orphans are reparented and reaped by init once they exit.
		pollUntil(t, 30*time.Second, w.Name+" exits after its master was SIGKILLed", func() bool {
			return processGone(w.PID)
		})
	}
}

// TestSIGTERMDrainsInFlightRequests keeps clients busy while the master is
// told to stop: every request must end in a 200 or in a connection error
// (refused or closed before it was accepted), never in an error status or a
// cut response.
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
				code, resp, _ := in.post("/v2/models/default/infer", body, nil)
				switch {
				case code == http.StatusOK:
					if term := termAt.Load(); term != 0 && start < term {
						spanning.Add(1) // in flight when SIGTERM arrived
					}
					if ok.Add(1) >= 6 {
						once.Do(func() { close(enough) })
					}
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
		t.Fatalf("%d requests got an error status during the drain, first: %v", bad.Load(), firstBad.Load())
	}
	if spanning.Load() == 0 {
		t.Fatal("no request was in flight when SIGTERM arrived, so the drain was not exercised")
	}
	t.Logf("%d requests succeeded (%d of them in flight at SIGTERM), %d connection errors after the listener closed",
		ok.Load(), spanning.Load(), connErrs.Load())
}
