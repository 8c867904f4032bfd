package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// TestReportOfAKnownScoreboard builds `supervisor status` from a board
// with known contents (two workers, known counters, a fake GPU) and checks
// the text table and the JSON: the rows, the pool sums and the GPU line.
func TestReportOfAKnownScoreboard(t *testing.T) {
	sb, err := shm.Create(filepath.Join(t.TempDir(), "board"), 4, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	// Live pids, so the rows are not marked gone.
	inferPID, prepPID := os.Getpid(), os.Getppid()
	workers := []struct {
		id       shm.Identity
		pid      int
		requests int
		failed   int
	}{
		{shm.Identity{Role: "infer", Name: "infer-0", Models: []string{"m"}, Device: "cpu", CPUs: "0", Generation: 3, Spawned: now.Add(-time.Minute)}, inferPID, 40, 0},
		{shm.Identity{Role: "prep", Name: "prep-0", Models: []string{"m"}, Device: "cpu", CPUs: "1", Generation: 3, RecycleAfter: 100, Spawned: now.Add(-time.Minute)}, prepPID, 42, 2},
	}
	for i, w := range workers {
		s := sb.Slot(i)
		s.Claim(w.id)
		s.SetPID(w.pid)
		s.SetState(shm.Ready)
		s.SetReadyTime(now.Add(-30 * time.Second))
		s.Heartbeat(now)
		for j := range w.requests {
			s.RequestStarted()
			s.RequestFinished(3*time.Millisecond, j < w.failed)
		}
	}
	r := buildReport(reportInput{
		status: control.Status{PID: 100, Version: "test", Ready: true, Listen: "127.0.0.1:8000", Started: now.Add(-time.Hour), Generation: 3,
			Workers: []control.WorkerStatus{{Name: "infer-0", Role: "infer", PID: inferPID, State: "ready"}, {Name: "prep-0", Role: "prep", PID: prepPID, State: "ready", Restarts: 1}}},
		header:  sb.Header(),
		slots:   sb.Snapshot(),
		procs:   map[int]procSample{inferPID: {RSS: 64 << 20, CPUPercent: 50}, prepPID: {RSS: 16 << 20, CPUPercent: 10}},
		gpus:    []affinity.GPUUsage{{Index: 0, UUID: "GPU-fake", Name: "Fake GPU", UtilizationPercent: 37, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 8 << 30}},
		now:     now,
		boardOK: true,
	})
	var text bytes.Buffer
	r.WriteText(&text)
	out := text.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(fmt.Sprintf(`(?m)^3 +infer +infer-0 +%d +cpu +0 +ready +30s +40 +0 +0 +0 +64\.0MiB +50 `, inferPID)),
		regexp.MustCompile(fmt.Sprintf(`(?m)^3 +prep +prep-0 +%d +cpu +1 +ready +30s +42 +0 +0 +2 +16\.0MiB +10 +\S+ +1 +58 reqs`, prepPID)),
		regexp.MustCompile(`(?m)^prep +1 +1 +42 +0 +0 +2 `),
		regexp.MustCompile(`(?m)Fake GPU.*37`),
	} {
		if !want.MatchString(out) {
			t.Errorf("status text lacks %v:\n%s", want, out)
		}
	}

	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		PID       int `json:"pid"`
		Processes []struct {
			Name      string `json:"name"`
			PID       int    `json:"pid"`
			Requests  uint64 `json:"requests"`
			Errors    uint64 `json:"errors"`
			RecycleIn uint64 `json:"recycle_in"`
		} `json:"processes"`
		Pools []struct {
			Role     string `json:"role"`
			Requests uint64 `json:"requests"`
		} `json:"pools"`
		GPUs []struct {
			Name string `json:"name"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.PID != 100 || len(back.Processes) != 2 || back.Processes[0].Name != "prep-0" || back.Processes[0].Requests != 42 ||
		back.Processes[0].Errors != 2 || back.Processes[0].RecycleIn != 58 || back.Processes[1].PID != inferPID ||
		len(back.Pools) != 2 || len(back.GPUs) != 1 || back.GPUs[0].Name != "Fake GPU" {
		t.Errorf("status JSON: %s", b)
	}
	if !strings.Contains(string(b), `"bottleneck"`) {
		t.Errorf("status JSON has no bottleneck: %s", b)
	}
}

// TestTextReportNamesEveryUnavailableModel: a model no infer worker serves
// has no reason from a worker, and still gets its line; a model with
// quarantined request bodies gets a POISON line, one with runs stopped at
// max_run_time a RUN TIMEOUTS line; a ready model's line shows its
// content identity, and a MODEL WARNING line follows when its warm-up
// failed.
func TestTextReportNamesEveryUnavailableModel(t *testing.T) {
	r := &Report{Status: control.Status{Models: []control.ModelState{
		{Name: "ok", Ready: true, Identity: "sha256:ab12"},
		{Name: "broken", Reason: "could not load: bad file"},
		{Name: "orphan"},
		{Name: "cold", Ready: true, Identity: "sha256:cd34", Warning: "warm-up at batch size 1 failed"},
	}, Quarantined: map[string]int{"ok": 2}, RunTimeouts: map[string]int64{"ok": 5}}}
	var b bytes.Buffer
	r.WriteText(&b)
	for _, want := range []string{"MODEL UNAVAILABLE broken: could not load: bad file", "MODEL UNAVAILABLE orphan: no infer worker serves",
		"POISON ok: 2 request bodies refused 422", "RUN TIMEOUTS ok: 5 requests answered 500", "model ok: sha256:ab12",
		"model cold: sha256:cd34", "MODEL WARNING cold (it serves): warm-up at batch size 1 failed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "MODEL UNAVAILABLE ok") {
		t.Errorf("status text names a ready model unavailable:\n%s", b.String())
	}
}

// TestTextReportShowsDrainFirst: a worker last replaced drain-first (its
// GPU had no memory for the replacement beside it) gets a line with the
// reason and the figures, in the text, on the status page and in the
// JSON; one replaced
// surge-first does not.
func TestTextReportShowsDrainFirst(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Report{At: at.Add(2 * time.Minute), Status: control.Status{Workers: []control.WorkerStatus{
		{Name: "infer-0", LastReplacement: &control.Replacement{Mode: control.ReplaceDrainFirst, Reason: "reload",
			Why: "free 9.5 GiB, worker uses 30.0 GiB", At: at}},
		{Name: "infer-1", LastReplacement: &control.Replacement{Mode: control.ReplaceSurge, Reason: "reload", At: at}},
	}}}
	var b bytes.Buffer
	r.WriteText(&b)
	if want := "infer-0: last replaced drain-first 2m0s ago (reload): its GPU had no memory for both (free 9.5 GiB, worker uses 30.0 GiB)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("status text lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "infer-1:") {
		t.Errorf("status text names a worker replaced surge-first:\n%s", b.String())
	}
	if page := string(Page(r, nil)); !strings.Contains(page, "infer-0: last replaced drain-first 2m0s ago (reload): its GPU had no memory for both (free 9.5 GiB, worker uses 30.0 GiB)") {
		t.Errorf("the status page lacks infer-0's drain-first line")
	}
	js, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(js), `"last_replacement":{"mode":"drain-first","reason":"reload","why":"free 9.5 GiB, worker uses 30.0 GiB"`) {
		t.Errorf("status JSON lacks infer-0's last replacement: %v\n%s", err, js)
	}
}

// TestTextReportShowsWarnings: each of the master's warnings (a systemd
// TimeoutStopSec below the stop bound) gets a WARNING line in the text and
// on the status page.
func TestTextReportShowsWarnings(t *testing.T) {
	const msg = "supervisor.service has TimeoutStopSec=1m30s but this config's stop takes up to 2m10s"
	r := &Report{Status: control.Status{Warnings: []string{msg}}}
	var b bytes.Buffer
	r.WriteText(&b)
	if !strings.Contains(b.String(), "WARNING: "+msg+"\n") {
		t.Errorf("status text lacks the warning line:\n%s", b.String())
	}
	if page := string(Page(r, nil)); !strings.Contains(page, "WARNING: supervisor.service has TimeoutStopSec=1m30s") {
		t.Errorf("the status page lacks the warning")
	}
}

// TestTextReportNamesTheStopStage: a stopping master is shown stopping,
// with its stage, not ready; the status page says the same.
func TestTextReportNamesTheStopStage(t *testing.T) {
	for stage, want := range map[string]string{"": ", ready,", control.StoppingGrace: ", stopping (drain_grace),", control.StoppingDrain: ", stopping (draining),"} {
		r := &Report{Status: control.Status{Ready: stage == "", Stopping: stage}}
		var b bytes.Buffer
		r.WriteText(&b)
		if !strings.Contains(b.String(), want) {
			t.Errorf("stopping %q: status text lacks %q:\n%s", stage, want, b.String())
		}
		page := Page(r, nil)
		if stage != "" && !strings.Contains(string(page), "stopping ("+stage+")") {
			t.Errorf("stopping %q: the status page does not say so", stage)
		}
	}
}
