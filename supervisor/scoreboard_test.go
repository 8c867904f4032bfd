package supervisor

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestBoardCountersSurviveReleasedSlots: a worker's counts stay in the
// totals after its process is reaped and its slot reused, so /metrics
// counters never go back on a recycle.
func TestBoardCountersSurviveReleasedSlots(t *testing.T) {
	b := openBoard(t.TempDir(), 1, 3, zerolog.Nop())
	if b == nil {
		t.Skip("no /dev/shm here")
	}
	defer b.remove()
	spec := worker.Spec{Role: worker.RolePrep, Name: "prep-0", Generation: 3, MaxRequests: 50,
		Models: []worker.Model{{Name: "a"}, {Name: "b"}}}
	bs := b.claim(&spec)
	i := bs.i
	if i < 0 || spec.Scoreboard != b.path() || spec.ScoreboardSlot != i {
		t.Fatalf("claim = %d, spec board %q slot %d", i, spec.Scoreboard, spec.ScoreboardSlot)
	}
	b.started(bs, os.Getpid())
	w, err := shm.Open(spec.Scoreboard) // as the worker does
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ws := w.Slot(spec.ScoreboardSlot)
	for range 5 {
		ws.RequestStarted()
		ws.RequestFinished(time.Millisecond, false)
		ws.Model(1).RequestFinished(time.Millisecond, shm.Success)
	}
	ws.Model(0).RequestFinished(time.Millisecond, shm.Rejected)

	count := func() (uint64, uint64, uint64) {
		_, slots, tot := b.snapshot()
		for _, s := range slots {
			tot.add(s)
		}
		return tot.role("prep").Requests, tot.models["b"].Success, tot.models["a"].Failures[shm.Rejected]
	}
	if r, s, f := count(); r != 5 || s != 5 || f != 1 {
		t.Fatalf("live totals: %d requests, %d b successes, %d a rejections; want 5, 5, 1", r, s, f)
	}
	_, slots, _ := b.snapshot()
	if got := slots[i]; got.Name != "prep-0" || got.Generation != 3 || got.RecycleAfter != 50 || got.PID != os.Getpid() || got.Stale(shm.Header{Generation: 3}) {
		t.Errorf("claimed slot = %+v", got)
	}
	b.release(bs)
	for range 3 { // reuse every slot at least once
		other := worker.Spec{Role: worker.RolePrep, Name: "prep-1"}
		b.release(b.claim(&other))
	}
	if r, s, f := count(); r != 5 || s != 5 || f != 1 {
		t.Errorf("after release and reuse: %d, %d, %d; want 5, 5, 1", r, s, f)
	}
	b.stamp(4, nil)
	if h, _, _ := b.snapshot(); h.Generation != 4 {
		t.Errorf("header generation %d after stamp(4)", h.Generation)
	}
	path := b.path()
	b.remove()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("board file after remove: %v", err)
	}
	if b.claim(&spec).i != -1 || b.path() != "" {
		t.Error("a removed board still hands out slots")
	}
	b.release(bs) // no-op, no fault
}

func TestMetricsTextFormat(t *testing.T) {
	tot := newTotals()
	tot.add(shm.SlotSnapshot{State: shm.Ready, Role: "infer", Requests: 3,
		Latency:    shm.Histogram{Bounds: []float64{0.1, 1}, Counts: []uint64{1, 1, 1}, Sum: 2.5},
		ModelStats: []shm.ModelSnapshot{{Name: `we"ird`, Success: 3, Inferences: 7}}})
	text := string(metricsText(scrape{totals: tot, status: control.Status{Generation: 2, Ready: true}}))
	for _, want := range []string{
		"# TYPE nv_inference_request_success counter\n",
		`nv_inference_request_success{model="we\"ird",version="1"} 3` + "\n",
		`nv_inference_count{model="we\"ird",version="1"} 7` + "\n",
		`nv_inference_request_failure{model="we\"ird",reason="REJECTED",version="1"} 0` + "\n",
		`supervisor_request_duration_seconds_bucket{role="infer",le="0.1"} 1` + "\n",
		`supervisor_request_duration_seconds_bucket{role="infer",le="1"} 2` + "\n",
		`supervisor_request_duration_seconds_bucket{role="infer",le="+Inf"} 3` + "\n",
		`supervisor_request_duration_seconds_sum{role="infer"} 2.5` + "\n",
		"supervisor_generation 2\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, "nv_gpu_utilization{") {
		t.Error("GPU series without GPUs")
	}
}

func TestBottleneck(t *testing.T) {
	tests := []struct {
		name  string
		pools []PoolSummary
		gpus  []GPUSummary
		want  string
	}{
		{"idle", []PoolSummary{{Role: "prep", Ready: 2, CPUs: 2, CPUPercent: 10}, {Role: "infer", Ready: 1}}, nil, "none"},
		{"infer queue", []PoolSummary{{Role: "prep", Ready: 2, CPUs: 2, CPUPercent: 30}, {Role: "infer", Ready: 1, Queue: 12}}, nil, "infer: 12 requests queued"},
		{"prep cpu", []PoolSummary{{Role: "prep", Ready: 1, CPUs: 1, CPUPercent: 99}, {Role: "infer", Ready: 1}}, nil, "prep: its workers use 99%"},
		{"gpu", []PoolSummary{{Role: "infer", Ready: 1}}, []GPUSummary{{Index: 0, UtilizationPercent: 97}}, "gpu 0: 97% utilised"},
	}
	for _, tt := range tests {
		if got := bottleneck(tt.pools, tt.gpus); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: bottleneck = %q, want prefix %q", tt.name, got, tt.want)
		}
	}
}

func TestQuantileAndCPUCount(t *testing.T) {
	h := shm.Histogram{Bounds: []float64{0.001, 0.01, 0.1}, Counts: []uint64{98, 1, 1, 0}}
	if q := quantile(h, 0.99); q != 0.01 {
		t.Errorf("p99 = %v, want 0.01", q)
	}
	if q := quantile(shm.Histogram{Bounds: []float64{1}, Counts: []uint64{0, 0}}, 0.99); q != 0 {
		t.Errorf("p99 of nothing = %v", q)
	}
	for list, want := range map[string]int{"0-3,8": 5, "": 0, "2": 1, "0-1,4-5": 4} {
		if got := cpuCount(list); got != want {
			t.Errorf("cpuCount(%q) = %d, want %d", list, got, want)
		}
	}
}

func TestStatusPageIsSelfContained(t *testing.T) {
	r := buildReport(reportInput{now: time.Now(), status: control.Status{PID: 1, Ready: true, Listen: "<script>"},
		slots: []shm.SlotSnapshot{{State: shm.Ready, Role: "prep", Name: "prep-0", PID: os.Getpid()}}})
	t0 := time.Now()
	pts := []ratePoint{{At: t0}, {At: t0.Add(chartStep), Requests: 50,
		Latency: shm.Histogram{Bounds: []float64{0.01}, Counts: []uint64{50, 0}}}}
	page := string(statusPage(r, pts))
	if !strings.Contains(page, "<svg") || !strings.Contains(page, "prep-0") || !strings.Contains(page, "10.0/s") {
		t.Errorf("page lacks the chart or the worker:\n%s", page)
	}
	if strings.Contains(page, "<script>") {
		t.Error("the listen address was not escaped")
	}
	for _, ext := range []string{"http://", "https://", "src=", "<link"} {
		if strings.Contains(page, ext) {
			t.Errorf("page references an external asset (%q)", ext)
		}
	}
}

// TestBoardSurvivesTruncation truncates the board file under the master's
// mapping, as the workers' user can: the next snapshot does not kill the
// process (SIGBUS) but reports the fault and replaces the board; slots
// claimed on the damaged board are forgotten, new claims use the new one,
// and the retired totals from before the fault stay.
func TestBoardSurvivesTruncation(t *testing.T) {
	b := openBoard(t.TempDir(), 1, 3, zerolog.Nop())
	if b == nil {
		t.Skip("no /dev/shm here")
	}
	defer b.remove()
	var chowned []string
	if err := b.setOwner(func(p string) error { chowned = append(chowned, p); return nil }); err != nil {
		t.Fatal(err)
	}
	spec := worker.Spec{Role: worker.RolePrep, Name: "prep-0", Generation: 3}
	done := b.claim(&spec)
	w, err := shm.Open(spec.Scoreboard)
	if err != nil {
		t.Fatal(err)
	}
	w.Slot(done.i).RequestStarted()
	w.Slot(done.i).RequestFinished(time.Millisecond, false)
	w.Close()
	b.release(done) // 1 request retired before the fault
	old := b.claim(&spec)
	b.stamp(5, nil)

	if err := os.Truncate(b.path(), 0); err != nil {
		t.Fatal(err)
	}
	h, slots, tot := b.snapshot()
	if n, why := b.fault(); n != 1 || why == "" {
		t.Fatalf("after a snapshot of a truncated board: %d faults (%q), want 1", n, why)
	}
	if len(slots) != 0 || h.Slots != 0 || tot.role("prep").Requests != 1 {
		t.Fatalf("snapshot of the damaged board: %d slots, header %+v, %d retired requests; want none, zero, 1",
			len(slots), h, tot.role("prep").Requests)
	}
	if len(chowned) != 2 || chowned[1] != b.path() {
		t.Errorf("the recreated board was not given to the workers' user: %v", chowned)
	}
	b.release(old) // a slot of the damaged board: ignored, no fault
	fresh := worker.Spec{Role: worker.RoleInfer, Name: "infer-0", Generation: 5}
	if bs := b.claim(&fresh); bs.i < 0 || bs.sb == old.sb {
		t.Fatalf("claim after the fault: slot %d on the old board %t", bs.i, bs.sb == old.sb)
	}
	h, slots, _ = b.snapshot()
	if h.Generation != 5 || len(slots) == 0 {
		t.Fatalf("the recreated board: header %+v, %d slots; want generation 5 and slots", h, len(slots))
	}
	if n, _ := b.fault(); n != 1 {
		t.Fatalf("the recreated board faulted too: %d faults", n)
	}
}
