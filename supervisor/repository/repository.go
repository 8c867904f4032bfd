package repository

import (
	"maps"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// The repository API (Triton's model repository extension, served by
// http.go) changes which models of the config file are served,
// at run time, with model_control: explicit. Its changes are runtime state
// over the file, never written to it:
//
//   - The served config is always the file as last read, with the API's
//     state applied: unloaded models left out, a load's override applied
//     over the model's batching (override.go).
//   - A load or unload is a reload: it re-reads the file, like SIGHUP, and
//     goes through the same queue and surge-first replacement; one truth
//     at any time, the file as it is now plus the API's changes over it.
//   - A reload (SIGHUP, `supervisor reload`) keeps the API state of every
//     model still in the file; a model gone from the file loses its state;
//     a model new to the file loads if startup_models allows it (as at
//     start). Switching model_control to none drops the API state.
//   - A restart, and an upgrade (the new binary reads the file like a
//     restart), start from the file: startup_models, or every model.
//
// API holds that state and answers the routes (http.go, ops.go). The API
// state of a model is only ever changed by one API call at a time (ops),
// and in force once a reload has stored the config made from it (Commit):
// a reload that fails before that leaves the previous state. The zero
// value keeps state (Start, Plan, Commit, Describe) but cannot serve the
// routes: use New.
type API struct {
	m   Master
	log zerolog.Logger

	ops sync.Mutex // one load or unload at a time, held across its reload

	mu      sync.Mutex
	cur     repoState
	pending *repoPlan // made by the running reload, committed if it applies
	// seq counts API changes; committed is the count the serving config
	// was planned with, so a change is in force once committed >= its seq.
	seq, committed uint64
	// busyModel is the model an API change is being applied to, and
	// busyState its Triton state meanwhile (LOADING or UNLOADING).
	busyModel, busyState string
}

// repoState is the file last applied and the API's state over it.
type repoState struct {
	file  *config.Config
	known map[string]bool        // models of that file
	api   map[string]modelChange // by model name; absent = as the file says
}

// modelChange is what the API did to one model.
type modelChange struct {
	unloaded bool
	reason   string              // why unloaded: by the API, or not a startup model
	override *config.ModelConfig // a load's override; nil = the file's settings
}

// repoPlan is an effective config and what it was made from: the file,
// its models, and the models it leaves out because startup_models does.
type repoPlan struct {
	eff        *config.Config
	file       *config.Config
	known      map[string]bool
	notStarted []string
	seq        uint64 // the API changes it includes
}

// reasonUnloaded is the index's reason for a model unloaded by the API
// (Triton's word); reasonNotStarted for one startup_models leaves out.
const (
	reasonUnloaded   = "unloaded"
	reasonNotStarted = "not in startup_models; load it with POST /v2/repository/models/{m}/load"
)

// Master is what the API asks of the master: loads and unloads are
// reloads, run one at a time by the master's reload queue.
type Master interface {
	// Reload re-reads the config file, makes the config to serve from it
	// through Plan, stores it (then Commit) and replaces the workers it
	// changes; it returns the outcome once the reload has ended.
	Reload() control.OpResult
	// Config is the config in force.
	Config() *config.Config
	// ModelStates are the served models' states now.
	ModelStates() []control.ModelState
	// Stopping reports that shutdown has begun: a change waiting for its
	// reload is answered at once, unfinished.
	Stopping() bool
	// Unready reports that the master cannot reload (starting, upgraded
	// and draining, or stopping): a retry may succeed, elsewhere or later.
	Unready() bool
}

// New returns the API of master m, with no state until Start.
func New(m Master, log zerolog.Logger) *API { return &API{m: m, log: log} }

// Start makes the first served config from the file.
func (r *API) Start(file *config.Config) *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.cur.plan(file)
	r.cur.apply(p)
	return p.eff
}

// plan returns the config to serve for file under the state s. s is not
// changed: apply does that once the config serves.
func (s repoState) plan(file *config.Config) *repoPlan {
	p := &repoPlan{file: file, known: map[string]bool{}}
	eff := *file
	eff.Models = nil
	for _, mc := range file.Models {
		// The API's state is by model: a load or unload takes every
		// version the file serves (internal/v2 versions.go).
		name, _ := v2.SplitServedName(mc.Name)
		p.known[name] = true
		if !file.Explicit() {
			eff.Models = append(eff.Models, mc)
			continue
		}
		ch, ok := s.api[name]
		if !ok && !s.known[name] && !file.LoadsAtStart(name) {
			ch = modelChange{unloaded: true, reason: reasonNotStarted}
			if !slices.Contains(p.notStarted, name) {
				p.notStarted = append(p.notStarted, name)
			}
		}
		switch {
		case ch.unloaded:
		case ch.override != nil:
			o := *ch.override
			o.Name, o.Path, o.Preprocess, o.Postprocess, o.Warmup = mc.Name, mc.Path, mc.Preprocess, mc.Postprocess, mc.Warmup
			eff.Models = append(eff.Models, o)
		default:
			eff.Models = append(eff.Models, mc)
		}
	}
	p.eff = &eff
	return p
}

// apply makes p's file current: the API state of models gone from it (or
// all of it, with model_control none) is dropped, models startup_models
// leaves out are marked unloaded. Changes the API made since p was planned
// are kept (the reload queued after them applies them).
func (s *repoState) apply(p *repoPlan) {
	s.file, s.known = p.file, p.known
	if s.api == nil || !p.file.Explicit() {
		s.api = map[string]modelChange{}
	}
	for name := range s.api {
		if !p.known[name] {
			delete(s.api, name)
		}
	}
	for _, name := range p.notStarted {
		if _, ok := s.api[name]; !ok {
			s.api[name] = modelChange{unloaded: true, reason: reasonNotStarted}
		}
	}
}

// Plan makes the config to serve from the file a reload read and the API
// state; Commit makes that state current once the reload stores the
// config.
func (r *API) Plan(file *config.Config) *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = r.cur.plan(file)
	r.pending.seq = r.seq
	return r.pending.eff
}

// Commit makes the state cfg was planned from current (cfg now serves).
func (r *API) Commit(cfg *config.Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending != nil && r.pending.eff == cfg {
		r.cur.apply(r.pending)
		r.committed, r.pending = r.pending.seq, nil
	}
}

// snapshot returns the current state (its maps are copies).
func (r *API) snapshot() repoState {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.cur
	s.api, s.known = maps.Clone(s.api), maps.Clone(s.known)
	return s
}

// set records the API's change for a model and returns what it replaces,
// for undo, and the change's number, for inForce.
func (r *API) set(name string, ch modelChange) (prev modelChange, had bool, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, had = r.cur.api[name]
	if r.cur.api == nil {
		r.cur.api = map[string]modelChange{}
	}
	r.cur.api[name] = ch
	r.seq++
	return prev, had, r.seq
}

// inForce reports whether the config serving now was planned with the
// change numbered seq.
func (r *API) inForce(seq uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.committed >= seq
}

// setBusy records the model an API change is applying ("" when none).
func (r *API) setBusy(model, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busyModel, r.busyState = model, state
}

func (r *API) busy() (model, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busyModel, r.busyState
}

// undo puts back what set replaced, when the reload that was to apply the
// change did not store a config.
func (r *API) undo(name string, prev modelChange, had bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if had {
		r.cur.api[name] = prev
	} else {
		delete(r.cur.api, name)
	}
}

// Describe says, by model, what the API changed over the file (for
// `supervisor status`); nil when nothing.
func (r *API) Describe() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]string
	for name, ch := range r.cur.api {
		if out == nil {
			out = map[string]string{}
		}
		switch {
		case ch.unloaded:
			out[name] = ch.reason
		case ch.override != nil:
			out[name] = "loaded with a config override"
		default:
			out[name] = "loaded"
		}
	}
	return out
}
