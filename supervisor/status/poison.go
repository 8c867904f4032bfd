package status

import (
	"maps"
	"slices"

	"github.com/supervisor-dev/supervisor/internal/poison"
)

// writePoison writes the poison quarantine's series by model
// (supervisor/front poison.go): each nothing until it counts something.
func writePoison(p *promText, s poison.Stats) {
	writeCounterByModel(p, "supervisor_run_timeouts_total",
		"Inference requests answered 500 because their model run outlived max_run_time and was stopped", s.RunTimeouts)
	writeCounterByModel(p, "supervisor_poison_solo_runs_total",
		"Inference requests of poison suspects (bodies struck below limits.poison_threshold) sent to run in a batch of their own", s.SoloRuns)
	writeCounterByModel(p, "supervisor_poison_acquitted_total",
		"Poison suspects whose strikes were cleared because their solo run was served (2xx, or 400/413/415/422 for the body itself)", s.Acquitted)
	if len(s.Quarantined) == 0 {
		return
	}
	names := make([]string, 0, len(s.Quarantined))
	for n := range s.Quarantined {
		names = append(names, n)
	}
	slices.Sort(names)
	p.family("supervisor_poison_quarantined_total", "counter",
		"Request bodies quarantined because the infer worker serving them exited limits.poison_threshold times")
	for _, n := range names {
		p.sample("supervisor_poison_quarantined_total", float64(s.Quarantined[n]), "model", n)
	}
	p.family("supervisor_poison_quarantine_size", "gauge", "Request bodies refused 422 now (quarantined, within limits.poison_ttl)")
	for _, n := range names {
		p.sample("supervisor_poison_quarantine_size", float64(s.Current[n]), "model", n)
	}
}

// writeCounterByModel writes counter name (help) by model: nothing until
// one model counts.
func writeCounterByModel(p *promText, name, help string, byModel map[string]int64) {
	if len(byModel) == 0 {
		return
	}
	p.family(name, "counter", help)
	for _, n := range slices.Sorted(maps.Keys(byModel)) {
		p.sample(name, float64(byModel[n]), "model", n)
	}
}
