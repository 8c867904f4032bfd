package status

import (
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/poison"
)

// TestPoisonSeries: the quarantine's series by model, and none before a
// first quarantine.
func TestPoisonSeries(t *testing.T) {
	if text := string(MetricsText(Scrape{})); strings.Contains(text, "supervisor_poison") {
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

// TestRunTimeoutSeries: runs stopped at max_run_time by model, and none
// before the first.
func TestRunTimeoutSeries(t *testing.T) {
	if text := string(MetricsText(Scrape{})); strings.Contains(text, "supervisor_run_timeouts") {
		t.Errorf("run timeout series with none counted:\n%s", text)
	}
	text := string(MetricsText(Scrape{Poison: poison.Stats{RunTimeouts: map[string]int64{"slow": 2}}}))
	if want := `supervisor_run_timeouts_total{model="slow"} 2`; !strings.Contains(text, want+"\n") {
		t.Errorf("metrics lack %q:\n%s", want, text)
	}
	if strings.Contains(text, "supervisor_poison") {
		t.Errorf("run timeouts alone wrote poison series:\n%s", text)
	}
}

// TestSoloRunSeries: suspects sent to run alone by model, and none
// before the first.
func TestSoloRunSeries(t *testing.T) {
	if text := string(MetricsText(Scrape{})); strings.Contains(text, "supervisor_poison_solo_runs") {
		t.Errorf("solo run series with none counted:\n%s", text)
	}
	text := string(MetricsText(Scrape{Poison: poison.Stats{SoloRuns: map[string]int64{"m": 3}}}))
	if want := `supervisor_poison_solo_runs_total{model="m"} 3`; !strings.Contains(text, want+"\n") {
		t.Errorf("metrics lack %q:\n%s", want, text)
	}
}
