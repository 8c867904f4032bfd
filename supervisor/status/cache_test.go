package status

import (
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/respcache"
)

func TestMetricsCaches(t *testing.T) {
	text := string(MetricsText(Scrape{Caches: map[string]respcache.Stats{
		"m": {Hits: 3, HitNanos: 5000, Misses: 2, MissNanos: 7000, BytesUsed: 1024, BytesLimit: 65536},
	}}))
	for _, want := range []string{
		`nv_cache_num_hits_per_model{model="m",version="1"} 3`,
		`nv_cache_num_misses_per_model{model="m",version="1"} 2`,
		`nv_cache_hit_duration_per_model{model="m",version="1"} 5`,
		`nv_cache_miss_duration_per_model{model="m",version="1"} 7`,
		`supervisor_response_cache_bytes{model="m",version="1"} 1024`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(string(MetricsText(Scrape{})), "nv_cache") {
		t.Error("cache series without any cache")
	}
}
