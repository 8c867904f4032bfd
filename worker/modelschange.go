package worker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
)

// ModelsPath is the infer worker's admin route through which the master
// changes its models in place (POST, a JSON ModelsChange): a reload that
// only adds models (or versions) or only retires some keeps the worker, so
// the models it already serves never stop. Reachable only on the worker's
// Unix socket, like UpstreamsPath; not counted as a request.
const ModelsPath = "/_supervisor/models"

// ModelsChange is the infer worker's new model set.
type ModelsChange struct {
	// Models are the models to serve from now on: each one the worker
	// serves already keeps its session, batcher and counters; each new one
	// is loaded and warmed up as at boot; each one not listed is retired
	// (its queued requests run, then its session is released).
	Models []Model `json:"models"`
	// Slots are the model names of the worker's scoreboard record, in
	// record order (shm.Slot.Model's index): the old ones, retired
	// included, then the added ones.
	Slots []string `json:"slots"`
	// Unavailable lists new models not to load, with the reason (see
	// Spec.Unavailable).
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// ChangeModels asks the infer worker on socket to serve ch's models and
// returns its new GET /metadata answer (a ModelStatus per model of ch, in
// its order) once every added model is loaded and warmed up, or failed to.
// timeout bounds the whole exchange, loading included.
func ChangeModels(socket string, ch ModelsChange, timeout time.Duration) ([]ModelStatus, error) {
	body, err := json.Marshal(ch)
	if err != nil {
		return nil, err
	}
	answer, err := adminCall(socket, fasthttp.MethodPost, ModelsPath, body, fasthttp.StatusOK, timeout)
	if err != nil {
		return nil, fmt.Errorf("change the models of the infer worker on %q: %w", socket, err)
	}
	var out []ModelStatus
	if err := json.Unmarshal(answer, &out); err != nil {
		return nil, fmt.Errorf("change the models of the infer worker on %q: its answer: %w", socket, err)
	}
	return out, nil
}
