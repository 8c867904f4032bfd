package infer

import (
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
)

// stats answers GET /stats: every model's batcher statistics, or, with
// ?model=NAME, that model's alone (still as a one-entry object).
func (s *server) stats(ctx *fasthttp.RequestCtx) {
	models := s.cat.Load().models
	out := make(map[string]batch.Stats, len(models))
	only := string(ctx.QueryArgs().Peek("model"))
	for name, m := range models {
		if only == "" || only == name {
			out[name] = m.batcher.Stats()
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
