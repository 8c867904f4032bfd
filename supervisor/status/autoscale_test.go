package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
)

func TestAutoscaleMetricsAndText(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := control.Status{Workers: []control.WorkerStatus{{Name: "infer-0", Role: "infer"}, {Name: "prep-0", Role: "prep"}, {Name: "prep-1", Role: "prep"}},
		Autoscale: &control.AutoscaleStatus{Workers: 2, Min: 1, Max: 3, Ups: 3, Downs: 1,
			Last: &control.AutoscaleDecision{Direction: "up", At: at, From: 1, To: 2, Reason: "prep saturated"}}}
	text := string(MetricsText(Scrape{Totals: NewTotals(), Status: st}))
	for _, want := range []string{"supervisor_prep_workers 2\n", `supervisor_autoscale_events_total{direction="up"} 3` + "\n",
		`supervisor_autoscale_events_total{direction="down"} 1` + "\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	var buf bytes.Buffer
	(&Report{Status: st, At: at.Add(5 * time.Second)}).WriteText(&buf)
	if want := "prep autoscale: 2 workers (min 1, max 3), 3 up, 1 down; last up 1 -> 2, 5s ago: prep saturated\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("text report lacks %q:\n%s", want, buf.String())
	}
	st.Autoscale = nil
	text = string(MetricsText(Scrape{Totals: NewTotals(), Status: st}))
	if !strings.Contains(text, `supervisor_autoscale_events_total{direction="up"} 0`) {
		t.Error("metrics without autoscaling lack the zero events series")
	}
	buf.Reset()
	(&Report{Status: st, At: at}).WriteText(&buf)
	if strings.Contains(buf.String(), "autoscale") {
		t.Errorf("text report without autoscaling mentions it:\n%s", buf.String())
	}
}

func TestStatusPageShowsAutoscale(t *testing.T) {
	now := time.Now()
	st := control.Status{PID: 1, Autoscale: &control.AutoscaleStatus{Workers: 3, Min: 1, Max: 3, Ups: 2,
		Last: &control.AutoscaleDecision{Direction: "up", At: now.Add(-4 * time.Second), From: 2, To: 3, Reason: "busy <1.4>", Error: "boot failed"}}}
	page := string(Page(buildReport(reportInput{now: now, status: st}), nil))
	want := `Prep autoscale: 3 workers (min 1, max 3), 2 up, 0 down; last up 2 &rarr; 3, 4s ago: busy &lt;1.4&gt; <span class="bad">FAILED: boot failed</span>`
	if !strings.Contains(page, want) {
		t.Errorf("page lacks %q", want)
	}
}
