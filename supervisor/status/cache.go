package status

import (
	"slices"

	"github.com/supervisor-dev/supervisor/internal/respcache"
)

// writeCaches renders the response caches' counters: Triton's per-model
// cache series (durations in microseconds, as Triton gives them) and the
// bytes each cache holds.
func writeCaches(p *promText, caches map[string]respcache.Stats) {
	if len(caches) == 0 {
		return
	}
	names := make([]string, 0, len(caches))
	for n := range caches {
		names = append(names, n)
	}
	slices.Sort(names)
	series := []struct {
		name, kind, help string
		value            func(respcache.Stats) float64
	}{
		{"nv_cache_num_hits_per_model", "counter", "Number of response cache hits per model",
			func(s respcache.Stats) float64 { return float64(s.Hits) }},
		{"nv_cache_num_misses_per_model", "counter", "Number of response cache misses per model",
			func(s respcache.Stats) float64 { return float64(s.Misses) }},
		{"nv_cache_hit_duration_per_model", "counter", "Total response cache lookup duration of hits per model, in microseconds",
			func(s respcache.Stats) float64 { return float64(s.HitNanos / 1000) }},
		{"nv_cache_miss_duration_per_model", "counter", "Total response cache lookup duration of misses per model, in microseconds",
			func(s respcache.Stats) float64 { return float64(s.MissNanos / 1000) }},
		{"supervisor_response_cache_bytes", "gauge", "Bytes of the model's local response cache holding entries (at most max_bytes)",
			func(s respcache.Stats) float64 { return float64(s.BytesUsed) }},
		{"supervisor_response_cache_max_bytes", "gauge", "The model's local response cache size (response_cache.max_bytes)",
			func(s respcache.Stats) float64 { return float64(s.BytesLimit) }},
	}
	for _, c := range series {
		p.family(c.name, c.kind, c.help)
		for _, n := range names {
			model, version := tritonLabels(n)
			p.sample(c.name, c.value(caches[n]), "model", model, "version", version)
		}
	}
}
