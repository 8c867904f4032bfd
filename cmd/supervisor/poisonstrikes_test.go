package main

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/shm"
)

// poisonedInstance serves the ModByXMinus3 model "poisoned" with
// poison_threshold 2 and workers lines (YAML under workers:) added.
func poisonedInstance(t *testing.T, workers string) *instance {
	t.Helper()
	return startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		models: map[string]string{"poisoned": writeModel(t, t.TempDir(), "poisoned", onnxmodel.ModByXMinus3())},
		extra:  "limits:\n  poison_threshold: 2\n  poison_ttl: 60s\nworkers:\n" + workers})
}

const poisonedPath = "/v2/models/poisoned/infer"

// wantPoisoned posts body (with hdr) and wants status code.
func wantPoisoned(t *testing.T, in *instance, what string, body []byte, hdr map[string]string, code int) {
	t.Helper()
	if got, b, _ := in.post(poisonedPath, body, hdr); got != code {
		t.Fatalf("%s = %d %s, want %d", what, got, b, code)
	}
}

// TestPoisonKeyIgnoresTheEncoding: the poison body crashes infer-0 once
// as plain JSON and once gzip'd with other JSON whitespace; sent a third
// time as binary tensor data it is refused 422, while an innocent body
// is served throughout.
func TestPoisonKeyIgnoresTheEncoding(t *testing.T) {
	in := poisonedInstance(t, "  restart_backoff: 50ms\n")
	good := modBody("5,6,7,8")
	spaced := []byte("{ \"inputs\": [ { \"name\": \"x\", \"datatype\": \"INT64\",\n  \"shape\": [1, 4], \"data\": [1, 2, 3, 4] } ] }\n")
	for i, send := range []struct {
		body []byte
		hdr  map[string]string
	}{{modBody("1,2,3,4"), nil}, {httpcoding.Compress(httpcoding.Gzip, spaced), map[string]string{"Content-Encoding": "gzip"}}} {
		pid := workerNamed(t, in, "infer-0").PID
		wantPoisoned(t, in, fmt.Sprintf("poison send %d", i+1), send.body, send.hdr, http.StatusBadGateway)
		waitInferRestarted(t, in, pid)
		wantPoisoned(t, in, "the innocent body", good, nil, http.StatusOK)
	}
	header := `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"parameters":{"binary_data_size":32}}]}`
	bin := []byte(header)
	for _, x := range []uint64{1, 2, 3, 4} {
		bin = binary.LittleEndian.AppendUint64(bin, x)
	}
	wantPoisoned(t, in, "the poison body as binary tensors", bin,
		map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header)), "Content-Type": "application/octet-stream"},
		http.StatusUnprocessableEntity)
	wantPoisoned(t, in, "the innocent body", good, nil, http.StatusOK)
}

// TestPoisonCountsPrepCrashes: a prep worker's crash (SIGABRT: what a
// decoder bug's abort does) strikes the request it was decoding, and not
// the one waiting on its infer worker (infer-0 is stopped). The body
// being decoded at both crashes is refused 422 afterwards; the innocent
// one, in flight at both crashes too, is served (at 49438f4 every
// request in flight was struck, and it was refused).
func TestPoisonCountsPrepCrashes(t *testing.T) {
	in := poisonedInstance(t, "  heartbeat_timeout: 60s\n  restart_backoff: 50ms\n")
	bad, innocent := bigModBody(200_000), modBody("5,6,7,8")
	wantPoisoned(t, in, "an innocent body", innocent, nil, http.StatusOK)
	crashPrepDecoding(t, in, bad, innocent)
	wantPoisoned(t, in, "the innocent body retried after one crash", innocent, nil, http.StatusOK)
	crashPrepDecoding(t, in, bad, innocent)
	wantPoisoned(t, in, "the body decoded at both prep crashes", bad, nil, http.StatusUnprocessableEntity)
	wantPoisoned(t, in, "the innocent body, in flight at both crashes", innocent, nil, http.StatusOK)
}

// bigModBody is a V2 JSON request of the poisoned model with rows rows
// of 12345678: one that takes prep-0 a while to decode (7 MB, under the
// harness's max_body_bytes).
func bigModBody(rows int) []byte {
	b := []byte(`{"inputs":[{"name":"x","datatype":"INT64","shape":[` + strconv.Itoa(rows) + `,4],"data":[`)
	for i := range rows * 4 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "12345678"...)
	}
	return append(b, "]}]}"...)
}

// crashPrepDecoding holds innocent in flight on prep-0 (infer-0 is
// stopped, so it waits there), sends decoded, crashes prep-0 while its
// scoreboard record says it decodes it, and wants both answered 502;
// then lets infer-0 go on and waits for prep-0 back.
func crashPrepDecoding(t *testing.T, in *instance, decoded, innocent []byte) {
	t.Helper()
	infer, prep := workerNamed(t, in, "infer-0"), workerNamed(t, in, "prep-0")
	defer syscall.Kill(infer.PID, syscall.SIGCONT)
	stopProcess(t, infer.PID)
	codes := make(chan int, 2)
	post := func(body []byte) {
		code, _, _ := in.post(poisonedPath, body, nil)
		codes <- code
	}
	go post(innocent)
	pollUntil(t, 30*time.Second, "the innocent request in flight on prep-0", func() bool {
		return metricValue(t, in, `supervisor_lb_inflight{`) >= 1
	})
	board, slot := boardSlot(t, in, prep.PID)
	defer board.Close()
	go post(decoded)
	crashWhileAtWork(t, board, slot, prep.PID)
	for range 2 {
		if code := <-codes; code != http.StatusBadGateway {
			t.Fatalf("a request in flight on the crashed prep-0 = %d, want 502", code)
		}
	}
	sendSignal(t, infer.PID, syscall.SIGCONT)
	pollUntil(t, 30*time.Second, fmt.Sprintf("prep-0 to restart (was pid %d)", prep.PID), func() bool {
		w := workerNamed(t, in, "prep-0")
		return w.PID != 0 && w.PID != prep.PID && w.State == "ready"
	})
}

// crashWhileAtWork sends SIGABRT to pid while its scoreboard record says
// it is at work: it watches the record, stops the process (SIGSTOP) when
// it shows work, and, if the stopped process still is at work, aborts it
// there; else lets it go on and watches again.
func crashWhileAtWork(t *testing.T, board *shm.Scoreboard, slot, pid int) {
	t.Helper()
	// The record has no change notification: poll it closely (a decode
	// lasts milliseconds), stopping the process each time it shows work.
	aborted := polltest.Wait(30*time.Second, 50*time.Microsecond, func() bool {
		if board.AtWork(slot).Units == nil {
			return false
		}
		sendSignal(t, pid, syscall.SIGSTOP)
		if board.AtWork(slot).Units != nil {
			sendSignal(t, pid, syscall.SIGABRT) // delivered as it continues
			sendSignal(t, pid, syscall.SIGCONT)
			return true
		}
		sendSignal(t, pid, syscall.SIGCONT)
		return false
	})
	if !aborted {
		t.Fatalf("pid %d was never seen at work within 30s", pid)
	}
}

// boardSlot opens the instance's scoreboard and finds the slot of the
// worker with pid.
func boardSlot(t *testing.T, in *instance, pid int) (*shm.Scoreboard, int) {
	t.Helper()
	for _, path := range shm.Boards(in.runtimeDir) {
		b, err := shm.OpenReadOnly(path)
		if err != nil {
			continue
		}
		for _, s := range b.Snapshot() {
			if s.PID == pid {
				return b, s.Index
			}
		}
		b.Close()
	}
	t.Skipf("no scoreboard slot for pid %d (no /dev/shm?)", pid)
	return nil, 0
}

// TestPoisonIgnoresHangKills: a request in flight on infer-0 when the
// hang detection kills it (heartbeat_timeout; the test stops infer-0
// with SIGSTOP) gets no strike: after two such kills the same body is
// served. A wedged worker's requests are innocent (a run that never
// returns is max_run_time's strike), and counting them would quarantine
// a load test's one body after two hangs (TestChaos). Nothing of it ran
// (the stopped worker was at work on nothing), so the master sends it
// again: 503 while no infer worker is back, 200 if one is.
func TestPoisonIgnoresHangKills(t *testing.T) {
	in := poisonedInstance(t, "  heartbeat_timeout: 1s\n  restart_backoff: 50ms\n")
	body := modBody("7,7,7,7")
	for i := 1; i <= 2; i++ {
		pid := workerNamed(t, in, "infer-0").PID
		stopProcess(t, pid)
		if code, b, _ := in.post(poisonedPath, body, nil); code != http.StatusServiceUnavailable && code != http.StatusOK {
			t.Fatalf("send %d to the stopped infer-0 = %d %s, want 503 or 200: sent again, not 502", i, code, b)
		}
		waitInferRestarted(t, in, pid)
	}
	wantPoisoned(t, in, "the body in flight at two hang kills", body, nil, http.StatusOK)
}
