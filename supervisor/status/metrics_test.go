package status

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

func TestMetricsTextFormat(t *testing.T) {
	tot := NewTotals()
	tot.Add(shm.SlotSnapshot{State: shm.Ready, Role: "infer", Requests: 3,
		Latency:    shm.Histogram{Bounds: []float64{0.1, 1}, Counts: []uint64{1, 1, 1}, Sum: 2.5},
		ModelStats: []shm.ModelSnapshot{{Name: `we"ird`, Success: 3, Inferences: 7}}})
	text := string(MetricsText(Scrape{Totals: tot, Status: control.Status{Generation: 2, Ready: true},
		Bodies: BodyCounts{PoisonFallbackKeys: 5, RateLimitFallbacks: 4}}))
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
		"# TYPE supervisor_poison_fallback_keys_total counter\n",
		"supervisor_poison_fallback_keys_total 5\n",
		"# TYPE supervisor_rate_limit_fallbacks_total counter\n",
		"supervisor_rate_limit_fallbacks_total 4\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, "nv_gpu_utilization{") {
		t.Error("GPU series without GPUs")
	}
}

// TestMetricsLabelVersions: a version served as "vm@3" is labelled
// model="vm", version="3" in Triton's series, as Triton labels it, so a
// dashboard built for Triton sums a model's versions by its name.
func TestMetricsLabelVersions(t *testing.T) {
	tot := NewTotals()
	tot.Add(shm.SlotSnapshot{State: shm.Ready, Role: "infer", Requests: 5,
		ModelStats: []shm.ModelSnapshot{{Name: "vm@3", Success: 5, Inferences: 5}, {Name: "vm@2", Success: 1, Inferences: 1}}})
	text := string(MetricsText(Scrape{Totals: tot}))
	for _, want := range []string{
		`nv_inference_request_success{model="vm",version="3"} 5` + "\n",
		`nv_inference_request_success{model="vm",version="2"} 1` + "\n",
		`nv_inference_request_failure{model="vm",reason="BACKEND",version="3"} 0` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, "vm@") {
		t.Error("a Triton series names the served name vm@v rather than model and version")
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
	pts := []RatePoint{{At: t0}, {At: t0.Add(ChartStep), Requests: 50,
		Latency: shm.Histogram{Bounds: []float64{0.01}, Counts: []uint64{50, 0}}}}
	page := string(Page(r, pts))
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
