package prep

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
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

// stats answers GET /v2/models/{name}/stats (every model when name is ""),
// Triton's statistics extension: {"model_stats": [...]}. The numbers are
// the sum over the infer workers serving now; a worker that was replaced
// takes its counts with it.
func (h *handler) stats(ctx *fasthttp.RequestCtx, name string) {
	rs := h.routes.cur.Load()
	sum, err := inferquery.Stats(rs.sockets(), name)
	if err != nil {
		h.log.Error().Err(err).Msg("statistics")
		writeError(ctx, fasthttp.StatusBadGateway, err.Error())
		return
	}
	out := struct {
		ModelStats []modelStats `json:"model_stats"`
	}{ModelStats: []modelStats{}}
	for n := range rs.models {
		if name == "" || n == name {
			st := sum[n]
			rs.models[n].cache.AddStats(&st)
			out.ModelStats = append(out.ModelStats, modelStats{Name: n, Version: "1", Stats: st})
		}
	}
	slices.SortFunc(out.ModelStats, func(a, b modelStats) int { return strings.Compare(a.Name, b.Name) })
	body, err := json.Marshal(out)
	if err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, err.Error())
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
