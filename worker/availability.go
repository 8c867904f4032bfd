package worker

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Model availability (per-model isolation, as Triton does it): an infer
// worker loads every model it can and serves those; a model that fails to
// load or warm up is unavailable, with its reason, and the others serve.

// Model states an infer worker reports on its event pipe while it boots.
const (
	// ModelWarming is sent before the worker loads and warms up a model.
	// A worker that dies before the model's next state (ONNX Runtime
	// crashed the process, SIGFPE on an integer Mod) died on that model:
	// the master remembers it and the next worker skips it (Spec.Unavailable).
	ModelWarming = "warming"
	// ModelReady: loaded and warmed up; the worker serves it. Its
	// Warning, if any, is why its warm-up failed (it serves anyway).
	ModelReady = "ready"
	// ModelUnavailable: loading or warming up failed; Reason says why.
	ModelUnavailable = "unavailable"
)

// modelEventPrefix starts a model-state line on the event pipe, before the
// readiness line: "model {json ModelEvent}".
const modelEventPrefix = "model "

// ModelEvent is one model's state as an infer worker reports it.
type ModelEvent struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Warning is what went wrong with a ModelReady model that still
	// serves: its warm-up run failed (infer.warmUp).
	Warning string `json:"warning,omitempty"`
}

// ParseModelEvent decodes an event-pipe line written by Runtime.ModelState;
// ok is false when the line is not one.
func ParseModelEvent(line string) (ModelEvent, bool) {
	raw, ok := strings.CutPrefix(line, modelEventPrefix)
	if !ok {
		return ModelEvent{}, false
	}
	var ev ModelEvent
	if json.Unmarshal([]byte(raw), &ev) != nil || ev.Name == "" {
		return ModelEvent{}, false
	}
	return ev, true
}

// ModelState tells the master a model's state during boot. The write is
// synchronous: once ModelState(m, ModelWarming, "") returns, the master
// learns that m was being warmed even if ONNX Runtime kills the process
// the next instant (the line waits in the pipe). reason is why a
// ModelUnavailable model does not serve, or the warning of a ModelReady
// one ("": none).
func (r *Runtime) ModelState(name, state, reason string) {
	ev := ModelEvent{Name: name, State: state, Reason: truncate(reason, maxReasonBytes)}
	if state == ModelReady {
		ev.Reason, ev.Warning = "", ev.Reason
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	r.event(modelEventPrefix + string(b))
}

// maxReasonBytes bounds a reason on the event pipe: the master reads it
// line by line with a 64 KiB line limit, and an ONNX Runtime message can
// quote a whole graph.
const maxReasonBytes = 4 << 10

// truncate cuts s to at most n bytes, at a UTF-8 boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ModelStatus is one element of an infer worker's GET /metadata answer: the
// model's metadata as ONNX Runtime read it and, for a model the worker does
// not serve, why. The metadata of an unavailable model may be only its
// name (it never loaded). Older readers that decode tensor.Metadata ignore
// the extra field.
type ModelStatus struct {
	tensor.Metadata
	// Unavailable is why the model does not serve; "" = it serves.
	Unavailable string `json:"unavailable,omitempty"`
	// Warning is why the warm-up of a model that serves failed ("":
	// it ran, or none was asked).
	Warning string `json:"warning,omitempty"`
	// Serving is how the worker runs the model; nil from a worker that
	// predates it.
	Serving *Serving `json:"serving,omitempty"`
}
