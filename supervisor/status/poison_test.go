package status

import (
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/poison"
)

// TestPoisonSeries: the quarantine's series by model, and none before a
// first quarantine.
func TestPoisonSeries(t *testing.T) {
	if text := string(MetricsText(Scrape{})); strings.Contains(text, "supervisor_poison_quarantine") {
		t.Errorf("poison series with nothing quarantined:\n%s", text)
	}
	text := string(MetricsText(Scrape{Poison: poison.Stats{
		Quarantined: map[string]int64{"a": 3, "b": 1}, Current: map[string]int{"a": 1, "b": 0}}}))
	for _, want := range []string{
		`supervisor_poison_quarantined_total{model="a"} 3`, `supervisor_poison_quarantined_total{model="b"} 1`,
		`supervisor_poison_quarantine_size{model="a"} 1`, `supervisor_poison_quarantine_size{model="b"} 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
}

// TestCounterSeriesByModel: runs stopped at max_run_time, suspects sent
// alone and suspects acquitted, by model; each series absent before its
// first count, and none writes another's.
func TestCounterSeriesByModel(t *testing.T) {
	for _, c := range []struct {
		family, sample, other string
		stats                 poison.Stats
	}{
		{"supervisor_run_timeouts_total", `supervisor_run_timeouts_total{model="slow"} 2`, "supervisor_poison_quarantine",
			poison.Stats{RunTimeouts: map[string]int64{"slow": 2}}},
		{"supervisor_poison_solo_runs_total", `supervisor_poison_solo_runs_total{model="m"} 3`, "supervisor_run_timeouts",
			poison.Stats{SoloRuns: map[string]int64{"m": 3}}},
		{"supervisor_poison_acquitted_total", `supervisor_poison_acquitted_total{model="m"} 1`, "supervisor_run_timeouts",
			poison.Stats{Acquitted: map[string]int64{"m": 1}}},
	} {
		if text := string(MetricsText(Scrape{})); strings.Contains(text, c.family) {
			t.Errorf("%s with none counted:\n%s", c.family, text)
		}
		text := string(MetricsText(Scrape{Poison: c.stats}))
		if !strings.Contains(text, c.sample+"\n") {
			t.Errorf("metrics lack %q:\n%s", c.sample, text)
		}
		if strings.Contains(text, c.other) {
			t.Errorf("%s alone wrote %s series:\n%s", c.family, c.other, text)
		}
	}
}
