package prep

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
)

// statsTimeout bounds one infer worker's answer to a statistics request.
const statsTimeout = 5 * time.Second

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
	sum, err := gatherStats(rs.sockets(), name)
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

// gatherStats asks every infer worker, in parallel, for its statistics of
// model (all models for ""), and sums them per model.
func gatherStats(sockets []string, model string) (map[string]batch.Stats, error) {
	type answer struct {
		stats map[string]batch.Stats
		err   error
	}
	answers := make(chan answer, len(sockets))
	for _, s := range sockets {
		go func() {
			st, err := workerStats(s, model)
			answers <- answer{st, err}
		}()
	}
	sum := map[string]batch.Stats{}
	var firstErr error
	for range sockets {
		a := <-answers
		if a.err != nil {
			firstErr = a.err
			continue
		}
		for m, st := range a.stats {
			total := sum[m]
			total.Add(st)
			sum[m] = total
		}
	}
	return sum, firstErr
}

// workerStats reads one infer worker's GET /stats.
func workerStats(socket, model string) (map[string]batch.Stats, error) {
	c := &fasthttp.HostClient{
		Addr: "infer",
		Dial: func(string) (net.Conn, error) { return net.DialTimeout("unix", socket, statsTimeout) },
	}
	defer c.CloseIdleConnections()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://infer/stats")
	if model != "" {
		req.URI().QueryArgs().Set("model", model)
	}
	if err := c.DoTimeout(req, resp, statsTimeout); err != nil {
		return nil, fmt.Errorf("could not read statistics from infer worker %q: %w", socket, err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return nil, fmt.Errorf("infer worker %q answered %d to a statistics request: %s", socket, resp.StatusCode(), resp.Body())
	}
	var st map[string]batch.Stats
	if err := json.Unmarshal(resp.Body(), &st); err != nil {
		return nil, fmt.Errorf("bad statistics from infer worker %q: %w", socket, err)
	}
	return st, nil
}
