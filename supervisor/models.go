package supervisor

import (
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
)

// modelStates reports every configured model: ready when at least one
// serving infer worker serves it (did not report it unavailable).
func (m *Master) modelStates() []control.ModelState {
	// One snapshot per serving worker, not per model: health checks with
	// strict_readiness call this on every probe, with hundreds of models.
	var reports []map[string]string
	var serving []*workers.Process
	identities := map[string]string{} // the first serving worker's, by model
	for _, s := range m.infer.list() {
		if p := s.Serving(); p != nil {
			un, _ := p.Models()
			reports = append(reports, un)
			serving = append(serving, p)
			for _, wm := range p.ServedModels() {
				if _, seen := identities[wm.Name]; !seen {
					identities[wm.Name] = wm.Version
				}
			}
		}
	}
	cfg := m.cfg()
	states := make([]control.ModelState, 0, len(cfg.Models))
	for _, mc := range cfg.Models {
		st := control.ModelState{Name: mc.Name, Identity: identities[mc.Name]}
		for _, un := range reports {
			reason, down := un[mc.Name]
			st.Ready = st.Ready || !down
			if down && st.Reason == "" {
				st.Reason = reason
			}
		}
		if st.Ready {
			st.Reason = ""
			for _, p := range serving {
				if st.Warning == "" {
					st.Warning = p.ModelWarning(mc.Name)
				}
			}
		}
		states = append(states, st)
	}
	return states
}

// allModelsReady is strict_readiness's extra condition for
// /v2/health/ready: every configured model serves.
func (m *Master) allModelsReady() bool {
	for _, st := range m.modelStates() {
		if !st.Ready {
			return false
		}
	}
	return true
}

// unavailableModels lists "name: reason" for every model that does not
// serve, for reload outcomes.
func unavailableModels(states []control.ModelState) []string {
	var out []string
	for _, st := range states {
		if !st.Ready {
			out = append(out, st.Name+": "+st.Why())
		}
	}
	return out
}

// modelIdentity is the content identity of the file model is configured
// from, as modelSpecs last hashed it for the workers (modelid.Cache.Known:
// nothing is read on the request path), "" for a model not configured:
// the front's poison quarantine keys start with it, so that a reload from
// other weights ends the quarantines struck on the old ones.
func (m *Master) modelIdentity(model string) string {
	for _, mc := range m.cfg().Models {
		if mc.Name == model {
			return m.modelIDs.Known(mc.Path)
		}
	}
	return ""
}

// servedName is the served name a route of a model asks for
// (v2.Route.PickServed): the version it names, or the model's highest
// ready version; the route's own spelling for a version not served (the
// front refuses those before any key is made). The readiness of a
// model's versions is read only when it serves more than one and the
// route names none.
func (m *Master) servedName(r v2.Route) string {
	cfg := m.cfg()
	if !cfg.HasVersions() { // every model one file: the hot path
		return r.Model
	}
	served := cfg.ServedNames(r.Model)
	switch {
	case len(served) == 1 && r.Version == "":
		return served[0]
	case len(served) == 0:
		return v2.ServedName(r.Model, r.Version)
	}
	var ready func(string) bool
	if r.Version == "" {
		// Ready as modelStates says: a serving infer worker serves it.
		var reports []map[string]string
		for _, s := range m.infer.list() {
			if p := s.Serving(); p != nil {
				un, _ := p.Models()
				reports = append(reports, un)
			}
		}
		ready = func(name string) bool {
			for _, un := range reports {
				if _, down := un[name]; !down {
					return true
				}
			}
			return false
		}
	}
	if name, _ := r.PickServed(served, ready); name != "" {
		return name
	}
	return v2.ServedName(r.Model, r.Version)
}
