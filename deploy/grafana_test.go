package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// seriesName matches the supervisor's and Triton's series in a query.
var seriesName = regexp.MustCompile(`\b(?:nv|supervisor)_[a-z_]+\b`)

// TestGrafanaDashboardQueries: every panel of deploy/grafana has queries,
// Prometheus' parser (promtool, as recording rules) accepts each, and
// every series they name is one the supervisor exports.
func TestGrafanaDashboardQueries(t *testing.T) {
	data, err := os.ReadFile("grafana/supervisor.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana/supervisor.json: %v", err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkSeriesExported(t, fmt.Sprintf("panel %q query %s", p.Title, q.RefID), q.Expr)
			// Grafana fills $instance in; any regex stands for it here.
			expr, _ := json.Marshal(strings.ReplaceAll(q.Expr, "$instance", ".*"))
			fmt.Fprintf(&rules, "      - record: dashboard:panel%d_%s\n        expr: %s\n", i+1, q.RefID, expr)
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "promtool", "check", "rules", file)
}

// TestAlertRulesNameExportedSeries: a misspelt series in an alert never
// fires, and promtool cannot tell.
func TestAlertRulesNameExportedSeries(t *testing.T) {
	data, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	checkSeriesExported(t, "prometheus/alerts.yml", string(data))
}

// checkSeriesExported fails for each series in text that the supervisor's
// metrics (supervisor/status) do not declare.
func checkSeriesExported(t *testing.T, where, text string) {
	t.Helper()
	declared := exportedSeriesSource(t)
	for _, name := range seriesName.FindAllString(text, -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !strings.Contains(declared, `"`+base+`"`) {
			t.Errorf("%s names %s, which supervisor/status does not export", where, name)
		}
	}
}

// exportedSeriesSource is the source of supervisor/status, where every
// series is declared by its quoted name.
func exportedSeriesSource(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("../supervisor/status/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("supervisor/status sources not found: %v", err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}
