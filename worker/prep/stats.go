package prep

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker/prep/inferquery"
)

// modelStats is one entry of Triton's model_stats: the model's name and
// version, then the batcher statistics (inference_count, execution_count,
// inference_stats, batch_stats, ...) summed over every infer worker.
type modelStats struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	batch.Stats
}

// stats answers GET /v2/models/{name}[/versions/{v}]/stats for the served
// names served (one per version; every model when nil),
// Triton's statistics extension: {"model_stats": [...]}. The numbers are
// the sum over the infer workers serving now; a worker that was replaced
// takes its counts with it.
func (h *handler) stats(ctx *fasthttp.RequestCtx, served []string) {
	rs := h.routes.cur.Load()
	ask := "" // every model's, unless one is asked for
	if len(served) == 1 {
		ask = served[0]
	}
	sum, err := inferquery.Stats(rs.sockets(), ask)
	if err != nil {
		h.log.Error().Err(err).Msg("statistics")
		writeError(ctx, fasthttp.StatusBadGateway, err.Error())
		return
	}
	out := struct {
		ModelStats []modelStats `json:"model_stats"`
	}{ModelStats: []modelStats{}}
	for n := range rs.models {
		if served == nil || slices.Contains(served, n) {
			st := sum[n]
			rs.models[n].cache.AddStats(&st)
			name, version := v2.SplitServedName(n)
			out.ModelStats = append(out.ModelStats, modelStats{Name: name, Version: version, Stats: st})
		}
	}
	slices.SortFunc(out.ModelStats, func(a, b modelStats) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return v2.CompareVersions(a.Version, b.Version)
	})
	body, err := json.Marshal(out)
	if err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, err.Error())
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
