package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// TestMetricsStatusAndLogsAfterKnownTraffic sends a known mix of requests
// (successes, invalid inputs, requests that expire in a queue) and checks
// that /metrics counts each exactly, by model and failure reason; that
// `supervisor status --json` reads every worker from the scoreboard, also
// while the master cannot answer; that /status is a self-contained page;
// and that slow requests are logged.
func TestMetricsStatusAndLogsAfterKnownTraffic(t *testing.T) {
	in := startInstance(t, options{
		prepWorkers: 2,
		batching:    map[string]string{"types": "{max_batch_size: 8, max_queue_delay: 1h}"},
		extra:       "request_log:\n  slow_threshold: 1ns\n",
	})
	const good, invalid, expired = 12, 3, 2
	okBody := inferBody(t, v2Tensor{"x", "FP32", []int64{1, onnxmodel.MLPIn}, seq(onnxmodel.MLPIn, 1)})
	badBody := inferBody(t, v2Tensor{"x", "FP32", []int64{1, 3}, seq(3, 1)})
	for range good {
		if code, body, _ := in.post("/v2/models/mlp/infer", okBody, nil); code != http.StatusOK {
			t.Fatalf("mlp: %d %s", code, body)
		}
	}
	for range invalid {
		if code, body, _ := in.post("/v2/models/mlp/infer", badBody, nil); code != http.StatusBadRequest {
			t.Fatalf("mlp with a bad shape: %d %s, want 400", code, body)
		}
	}
	for range expired {
		// Alone, with an hour's queue delay, it can only expire: 503.
		if code, body, _ := in.post("/v2/models/types/infer", typesBody(t, 1000), nil); code != http.StatusServiceUnavailable {
			t.Fatalf("types with a 1ms timeout: %d %s, want 503", code, body)
		}
	}

	m := scrapeMetrics(t, in)
	want := map[string]float64{
		`nv_inference_request_success{model="mlp",version="1"}`:                     good,
		`nv_inference_request_failure{model="mlp",reason="OTHER",version="1"}`:      invalid,
		`nv_inference_request_failure{model="mlp",reason="REJECTED",version="1"}`:   0,
		`nv_inference_request_failure{model="types",reason="REJECTED",version="1"}`: expired,
		`nv_inference_request_failure{model="types",reason="BACKEND",version="1"}`:  0,
		`nv_inference_count{model="mlp",version="1"}`:                               good,
		`nv_inference_exec_count{model="mlp",version="1"}`:                          good,
		`nv_inference_exec_count{model="types",version="1"}`:                        0,
		`supervisor_requests_total{role="prep"}`:                                    good + invalid + expired,
		`supervisor_request_errors_total{role="prep"}`:                              invalid + expired,
		`supervisor_request_duration_seconds_count{role="prep"}`:                    good + invalid + expired,
		`supervisor_request_duration_seconds_bucket{le="+Inf",role="prep"}`:         good + invalid + expired,
		`supervisor_workers{role="prep",state="ready"}`:                             2,
		`supervisor_workers{role="infer",state="ready"}`:                            1,
		`supervisor_queue_duration_seconds_count{role="infer"}`:                     good, // expired requests never ran
		`supervisor_reloads_total{outcome="ok"}`:                                    0,
		`supervisor_generation`:                                                     1,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("/metrics %s = %v (present: %v), want %v", k, got, ok, v)
		}
	}
	if m[`nv_inference_compute_infer_duration_us{model="mlp",version="1"}`] <= 0 {
		t.Error("nv_inference_compute_infer_duration_us of mlp is 0 after runs")
	}

	t.Run("status --json", func(t *testing.T) { testStatusJSON(t, in, good+invalid+expired) })
	t.Run("status without the master", func(t *testing.T) { testStatusFromScoreboard(t, in) })
	t.Run("status page", func(t *testing.T) { testStatusPage(t, in) })
	if log := in.log.String(); !strings.Contains(log, `"message":"slow request"`) || !strings.Contains(log, `"model":"mlp"`) {
		t.Errorf("no slow-request log line for mlp in:\n%s", log)
	}
}

func testStatusJSON(t *testing.T, in *instance, prepRequests uint64) {
	r := statusReport(t, in)
	if r.Source != "control+scoreboard" || r.Scoreboard == "" || !r.Ready || r.PID != in.cmd.Process.Pid {
		t.Errorf("report source %q, board %q, ready %v, pid %d; want both sources, ready, pid %d", r.Source, r.Scoreboard, r.Ready, r.PID, in.cmd.Process.Pid)
	}
	roles := map[string]int{}
	var reqs uint64
	for _, p := range r.Processes {
		roles[p.Role]++
		if p.PID <= 0 || p.State != "ready" || p.Stale || p.Generation != 1 || p.RSSBytes == 0 || p.CPUs == "" {
			t.Errorf("process row %+v: want a live, ready, generation-1 worker with RSS and CPUs", p)
		}
		if p.Role == "prep" {
			reqs += p.Requests
		}
	}
	if roles["prep"] != 2 || roles["infer"] != 1 || reqs != prepRequests {
		t.Errorf("rows by role %v with %d prep requests; want 2 prep, 1 infer, %d requests", roles, reqs, prepRequests)
	}
	if len(r.Pools) != 2 || r.Pools[0].Role != "prep" || r.Pools[0].Ready != 2 || r.Pools[0].Requests != prepRequests || r.Bottleneck == "" {
		t.Errorf("pools %+v, bottleneck %q", r.Pools, r.Bottleneck)
	}
	if len(r.Workers) != 3 {
		t.Errorf("the control socket's workers (%d) are missing from the report", len(r.Workers))
	}
	text, err := in.cli("status")
	if err != nil || !strings.Contains(text, "prep-1") || !strings.Contains(text, "bottleneck:") || !strings.Contains(text, "RSS") {
		t.Errorf("status: %v\n%s", err, text)
	}
}

// testStatusFromScoreboard stops the master (SIGSTOP): the control socket
// no longer answers, and status still reads every worker from the board.
func testStatusFromScoreboard(t *testing.T, in *instance) {
	pid := in.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	pollUntil(t, 10*time.Second, fmt.Sprintf("master %d stopped by SIGSTOP", pid), func() bool { return processStopped(pid) })
	r := statusReport(t, in)
	if r.Source != "scoreboard" || r.ControlError == "" || r.PID != pid || len(r.Processes) != 3 {
		t.Errorf("with the master stopped: source %q (%s), pid %d, %d processes; want the scoreboard's 3 workers of master %d",
			r.Source, r.ControlError, r.PID, len(r.Processes), pid)
	}
}

func testStatusPage(t *testing.T, in *instance) {
	resp, err := httpClient.Get(in.metricsURL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		page.WriteString(sc.Text() + "\n")
	}
	body := page.String()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/status: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"prep-0", "prep-1", "infer-0", "Bottleneck", `http-equiv="refresh"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/status lacks %q", want)
		}
	}
	for _, external := range []string{"http://", "https://", "src=", "<link", "@import", "url("} {
		if strings.Contains(body, external) {
			t.Errorf("/status references an external asset (%q); it must be self-contained", external)
		}
	}
}

func statusReport(t *testing.T, in *instance) status.Report {
	t.Helper()
	out, err := in.cli("status", "--json")
	if err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	var r status.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decode status --json: %v\n%s", err, out)
	}
	return r
}

// scrapeMetrics parses /metrics (text format) into sample -> value, each
// sample written as name{labels sorted by name}.
func scrapeMetrics(t *testing.T, in *instance) map[string]float64 {
	t.Helper()
	resp, err := httpClient.Get(in.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("/metrics Content-Type %q, want the Prometheus text format", ct)
	}
	// Prometheus's own parser: whatever it rejects, a Prometheus server
	// would too.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v", err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sample := func(name string, extra []string, v float64) {
				ls := append(append([]string(nil), labels...), extra...)
				sort.Strings(ls)
				key := name
				if len(ls) > 0 {
					key = fmt.Sprintf("%s{%s}", name, strings.Join(ls, ","))
				}
				out[key] = v
			}
			switch {
			case m.Counter != nil:
				sample(name, nil, m.GetCounter().GetValue())
			case m.Gauge != nil:
				sample(name, nil, m.GetGauge().GetValue())
			case m.Untyped != nil:
				sample(name, nil, m.GetUntyped().GetValue())
			case m.Histogram != nil:
				h := m.GetHistogram()
				sample(name+"_count", nil, float64(h.GetSampleCount()))
				sample(name+"_sum", nil, h.GetSampleSum())
				for _, bk := range h.GetBucket() {
					sample(name+"_bucket", []string{fmt.Sprintf("le=%q", strconv.FormatFloat(bk.GetUpperBound(), 'g', -1, 64))}, float64(bk.GetCumulativeCount()))
				}
			}
		}
	}
	return out
}
