package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// TestTruncatedScoreboardDoesNotKillTheMaster truncates the master's
// scoreboard file under it (the workers' user owns that file): the master
// must not die of SIGBUS. /metrics and /status.json answer and count the
// fault, `supervisor status` and /status say the board was damaged, inference works
// again (workers that faulted on the old board are restarted on a new
// one), and the master still stops cleanly.
func TestTruncatedScoreboardDoesNotKillTheMaster(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, inferWorkers: 1, modelNames: []string{"mlp"}})
	boards := shm.Boards(in.runtimeDir)
	path, ok := boards[in.cmd.Process.Pid]
	if !ok {
		t.Skipf("the master has no scoreboard (no /dev/shm?): %v", boards)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var metrics string
	pollUntil(t, 30*time.Second, "/metrics counts the scoreboard fault", func() bool {
		code, body := getURL(t, in.metricsURL+"/metrics")
		metrics = string(body)
		return code == http.StatusOK && !strings.Contains(metrics, "supervisor_scoreboard_faults_total 0\n") &&
			strings.Contains(metrics, "supervisor_scoreboard_faults_total ")
	})
	select {
	case <-in.exited:
		t.Fatalf("the master exited after its scoreboard was truncated: %v\n%s", in.err, in.log.String())
	default:
	}
	code, body := getURL(t, in.metricsURL+"/status.json")
	var rep status.Report
	if code != http.StatusOK || json.Unmarshal(body, &rep) != nil || rep.ScoreboardFaults < 1 || rep.ScoreboardError == "" {
		t.Fatalf("/status.json after the fault: %d, faults %d, error %q\n%s", code, rep.ScoreboardFaults, rep.ScoreboardError, body)
	}
	if st := in.status(); st.ScoreboardFaults < 1 {
		t.Fatalf("supervisor status after the fault: %d scoreboard faults, want 1+", st.ScoreboardFaults)
	}
	if out, err := in.cli("status"); err != nil || !strings.Contains(out, "SCOREBOARD DAMAGED") {
		t.Fatalf("supervisor status (text) after the fault: %v\n%s", err, out)
	}
	if code, page := getURL(t, in.metricsURL+"/status"); code != http.StatusOK || !strings.Contains(string(page), `<div class="bad">SCOREBOARD DAMAGED`) {
		t.Fatalf("/status after the fault: %d, without the damaged-scoreboard notice\n%s", code, page)
	}
	body2 := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 16}, seq(16, 1)})
	pollUntil(t, 60*time.Second, "inference works after the fault", func() bool {
		code, _, _ := in.post("/v2/models/mlp/infer", body2, nil)
		return code == http.StatusOK
	})
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("the scoreboard was not recreated: %v, %v", fi, err)
	}
	out, err := in.cli("stop")
	if err != nil {
		t.Fatalf("supervisor stop: %v\n%s", err, out)
	}
	in.waitExit(30 * time.Second)
}

func getURL(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
