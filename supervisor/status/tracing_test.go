package status

import (
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tracing"
)

// TestTracingMetrics: the master's span counts are on /metrics while
// tracing is on, and absent while it is off.
func TestTracingMetrics(t *testing.T) {
	if text := string(MetricsText(Scrape{})); strings.Contains(text, "supervisor_trace_spans_total") {
		t.Fatal("span counts listed with tracing off")
	}
	text := string(MetricsText(Scrape{Tracing: &tracing.Stats{Exported: 5, Dropped: 2, Failed: 1}}))
	for _, want := range []string{
		`supervisor_trace_spans_total{process="master",outcome="exported"} 5`,
		`supervisor_trace_spans_total{process="master",outcome="dropped"} 2`,
		`supervisor_trace_spans_total{process="master",outcome="failed"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
