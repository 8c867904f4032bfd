package prep

import (
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/tritonconfig"
)

// Triton's model configuration extension (GET /v2/models/{m}/config) is
// worker/prep/tritonconfig's document, built from what the infer workers
// serving the model report and the prep worker's upstream timeout.

// config answers GET /v2/models/{name}/config for a model that serves.
func (h *handler) config(ctx *fasthttp.RequestCtx, m *model) {
	servings := h.routes.cur.Load().servings(m.md.Name)
	cfg := buildModelConfig(m, servings, h.timeout.Microseconds())
	body, err := json.Marshal(cfg)
	if err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, "encode the model configuration: "+err.Error())
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// servings lists how each infer worker serving name runs it, in the
// master's order; a worker that reports nothing counts as CPU, unbatched.
func (r *routes) servings(name string) []worker.Serving {
	var out []worker.Serving
	for _, v := range r.views {
		if !v.serves(name) {
			continue
		}
		s := worker.Serving{Provider: worker.ProviderCPU}
		if p := v.models[name].Serving; p != nil {
			s = *p
		}
		out = append(out, s)
	}
	return out
}

// buildModelConfig describes m as servings run it; queueTimeoutUS is the
// longest a request may wait without its own timeout.
func buildModelConfig(m *model, servings []worker.Serving, queueTimeoutUS int64) *tritonconfig.ModelConfig {
	return tritonconfig.Build(m.md.Name, m.api, func(output string) string { return labelsOf(m, output) }, servings, queueTimeoutUS)
}

// labelsOf is the labels file of output name when classification is
// configured on it.
func labelsOf(m *model, output string) string {
	if m.classify == nil || m.classify.output != output {
		return ""
	}
	return m.classify.labels
}
