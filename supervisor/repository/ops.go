package repository

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// indexEntry is one model of POST /v2/repository/index, in Triton's shape.
type indexEntry struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
}

// Triton's model states, as the index reports them.
const (
	indexReady       = "READY"
	indexUnavailable = "UNAVAILABLE"
	indexLoading     = "LOADING"
	indexUnloading   = "UNLOADING"
)

// repositoryIndex lists every model of the config file, loaded or not,
// in the file's order, one entry per version served (internal/v2
// versions.go); {"ready": true} keeps the READY ones only. It is
// answered in every model_control mode, as Triton does.
func (r *API) repositoryIndex(ctx *fasthttp.RequestCtx, body []byte) (int, string) {
	var req struct {
		Ready bool `json:"ready"`
	}
	if err := decodeRepositoryBody(body, &req); err != nil {
		return fasthttp.StatusBadRequest, err.Error()
	}
	served := map[string]control.ModelState{}
	for _, st := range r.m.ModelStates() {
		served[st.Name] = st
	}
	s := r.snapshot()
	busyModel, busyState := r.busy()
	entries := []indexEntry{}
	for _, mc := range s.file.Models {
		name, version := v2.SplitServedName(mc.Name)
		e := indexEntry{Name: name, Version: version, State: indexUnavailable}
		st, isServed := served[mc.Name]
		switch ch := s.api[name]; {
		case name == busyModel:
			e.State = busyState
		case ch.unloaded:
			e.Reason = ch.reason
		case !isServed:
			e.Reason = "not loaded yet: a reload is applying it"
		case st.Ready:
			e.State = indexReady
		default:
			e.Reason = st.Why()
		}
		if !req.Ready || e.State == indexReady {
			entries = append(entries, e)
		}
	}
	b, _ := json.Marshal(entries)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
	return fasthttp.StatusOK, ""
}

// repositoryLoad loads (or reloads) a model of the config file, with the
// override a body's parameters.config carries, and answers once the new
// generation serves it (200) or it failed (400 with the model's error).
func (r *API) repositoryLoad(name string, body []byte) (int, string) {
	mc, status, msg := r.repositoryModel(name)
	if status != 0 {
		return status, msg
	}
	var req struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
	}
	if err := decodeRepositoryBody(body, &req); err != nil {
		return fasthttp.StatusBadRequest, err.Error()
	}
	ch := modelChange{}
	for key, raw := range req.Parameters {
		if key != "config" {
			return fasthttp.StatusBadRequest, fmt.Sprintf("load parameter %q is not supported: a load takes parameters.config only (model files come from the config file's path, never from the request)", key)
		}
		var js string
		if err := json.Unmarshal(raw, &js); err != nil {
			return fasthttp.StatusBadRequest, "parameters.config must be a string holding the model config JSON, as Triton's load takes it"
		}
		o, err := overrideModel(mc, js)
		if err != nil {
			return fasthttp.StatusBadRequest, fmt.Sprintf("load of %q: %v", name, err)
		}
		ch.override = &o
	}
	out, stopped := r.changeRepository(name, ch, indexLoading)
	if stopped {
		return fasthttp.StatusServiceUnavailable, fmt.Sprintf("the master is stopping: the load of %q was cut short; a restart serves what the config file says", name)
	}
	if reason, failed := failedModel(out.res, name); failed {
		return fasthttp.StatusBadRequest, fmt.Sprintf("failed to load %q: %s (nothing changed: the previous version keeps serving, with its config)", name, reason)
	}
	for _, st := range out.states {
		if model, _ := v2.SplitServedName(st.Name); out.applied && model == name && !st.Ready {
			return fasthttp.StatusBadRequest, fmt.Sprintf("failed to load %q: %s (the other models keep serving; fix the model or unload it)", name, st.Why())
		}
	}
	return out.answer("load", name)
}

// repositoryUnload stops serving a model of the config file: the new
// generation of workers serves the others. Unloading a model that is not
// loaded succeeds at once, as in Triton.
func (r *API) repositoryUnload(name string, body []byte) (int, string) {
	if _, status, msg := r.repositoryModel(name); status != 0 {
		return status, msg
	}
	var req struct {
		Parameters struct {
			// Triton's: also unload the ensembles that use the model.
			// There are no ensembles here; accepted, and nothing else is.
			UnloadDependents bool `json:"unload_dependents"`
		} `json:"parameters"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := dec.Decode(&req); err != nil {
			return fasthttp.StatusBadRequest, fmt.Sprintf("the unload body may carry parameters.unload_dependents only: %v", err)
		}
	}
	cfg := r.m.Config()
	if !cfg.ServesModel(name) {
		return fasthttp.StatusOK, ""
	}
	if len(cfg.ModelNames()) == 1 {
		return fasthttp.StatusBadRequest, fmt.Sprintf("cannot unload %q: it is the only model loaded, and the server serves at least one (load another first)", name)
	}
	out, stopped := r.changeRepository(name, modelChange{unloaded: true, reason: reasonUnloaded}, indexUnloading)
	if stopped {
		return fasthttp.StatusServiceUnavailable, fmt.Sprintf("the master is stopping: the unload of %q was cut short; a restart serves what the config file says", name)
	}
	return out.answer("unload", name)
}

// repositoryModel finds a model of the config file for load or unload:
// 403 while model_control is not explicit, 404 for a name not in the file.
func (r *API) repositoryModel(name string) (mc config.ModelConfig, status int, msg string) {
	s := r.snapshot()
	if !s.file.Explicit() {
		// Triton answers 503 (UNAVAILABLE) here; 503 says "retry later",
		// and no retry succeeds until the config changes.
		return mc, fasthttp.StatusForbidden, "explicit model load / unload is not allowed: model_control is none (set model_control: explicit in the config file, then reload)"
	}
	for _, mc := range s.file.Models {
		if model, _ := v2.SplitServedName(mc.Name); model == name {
			mc.Name = name // an override names the model, not a version
			return mc, 0, ""
		}
	}
	names := s.file.ModelNames()
	sort.Strings(names)
	return mc, fasthttp.StatusNotFound, fmt.Sprintf("model %q is not in the config file, whose models are the repository (%s): add it there and reload", name, strings.Join(names, ", "))
}

// failedModel is why a version of model name failed to load in res, the
// first such version's reason (FailedModels is by served name).
func failedModel(res control.OpResult, name string) (reason string, failed bool) {
	for _, s := range slices.Sorted(maps.Keys(res.FailedModels)) {
		if model, _ := v2.SplitServedName(s); model == name {
			return res.FailedModels[s], true
		}
	}
	return "", false
}

// repoOutcome is how a load or unload ended: the reload's result, whether
// the change is in force, and the model states after it.
type repoOutcome struct {
	res     control.OpResult
	applied bool
	states  []control.ModelState
	// unready: the master could not reload (starting, upgraded and
	// draining, or stopping): a retry may succeed, elsewhere or later.
	unready bool
}

// answer is the HTTP answer to an outcome whose model did not fail.
func (o repoOutcome) answer(op, name string) (int, string) {
	switch {
	case !o.applied && o.unready:
		return fasthttp.StatusServiceUnavailable, fmt.Sprintf("%s of %q not applied, nothing changed: %s", op, name, o.res.Error)
	case !o.applied:
		return fasthttp.StatusBadRequest, fmt.Sprintf("%s of %q not applied, nothing changed: %s", op, name, o.res.Error)
	case !o.res.OK:
		return fasthttp.StatusInternalServerError, fmt.Sprintf("%s of %q applied, but the reload that applied it failed in part: %s", op, name, o.res.Error)
	}
	return fasthttp.StatusOK, ""
}

// changeRepository makes an API change to a model through a reload and
// waits for its outcome; stopped is true when the master began to stop
// first (the change then ends with the stop, unanswered).
func (r *API) changeRepository(name string, ch modelChange, busy string) (out repoOutcome, stopped bool) {
	done := make(chan repoOutcome, 1)
	go func() { done <- r.runRepositoryChange(name, ch, busy) }()
	// A stop does not close a channel the handler could wait on while the
	// front drains (shutdown sets stopping first): look every 50ms, so a
	// stop never waits for a load's boots (up to boot_timeout).
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case out = <-done:
			return out, false
		case <-tick.C:
			if r.m.Stopping() {
				return out, true
			}
		}
	}
}

// runRepositoryChange runs one API change: one at a time, the change set,
// a reload requested after it, and the change undone if no reload stored
// a config that has it.
func (r *API) runRepositoryChange(name string, ch modelChange, busy string) repoOutcome {
	r.ops.Lock()
	defer r.ops.Unlock()
	prev, had, seq := r.set(name, ch)
	r.setBusy(name, busy)
	defer r.setBusy("", "")
	res := r.m.Reload()
	_, failed := failedModel(res, name)
	applied := r.inForce(seq) && !failed
	if !applied {
		// Not stored, or the model failed to load and kept its previous
		// config: a later reload must not try the change again.
		r.undo(name, prev, had)
	}
	r.log.Info().Str("model", name).Str("op", strings.ToLower(busy)).Bool("applied", applied).Bool("ok", res.OK).Msg("repository API change finished")
	unready := r.m.Unready()
	return repoOutcome{res: res, applied: applied, states: r.m.ModelStates(), unready: unready}
}
