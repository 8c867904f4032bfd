package infer

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/worker"
)

// catalog is what the worker serves: its models by name, why each one
// that does not serve does not, and its GET /metadata answer. A catalog
// is never changed once published (server.cat): a reload in place
// (changeModels) publishes a new one, so a request reads one whole
// catalog, old or new, without a lock.
type catalog struct {
	models map[string]*model
	// unavailable holds why each model that failed to load or warm up
	// does not serve (per-model isolation: the others do), and each model
	// retired in place (a request already routed to it gets 503).
	unavailable map[string]string
	status      []worker.ModelStatus // GET /metadata's entries, in spec order
	metaJSON    []byte
}

func newCatalog() *catalog {
	return &catalog{models: map[string]*model{}, unavailable: map[string]string{}}
}

// seal renders the catalog's GET /metadata answer.
func (c *catalog) seal() error {
	b, err := json.Marshal(c.status)
	if err != nil {
		return err
	}
	c.metaJSON = b
	return nil
}

// changeModels answers the master's POST worker.ModelsPath: a reload that
// only adds or only retires models keeps this worker. The models it
// serves keep their sessions and batchers untouched; each added one is
// loaded and warmed up as at boot (the master is told of each, so a crash
// inside ONNX Runtime is pinned on it) and counted in its scoreboard
// record at its place in ch.Slots; each one no longer listed is retired
// once the new catalog is published: its queued and running batches
// finish, requests that still reach it get 503, and its session is
// released. A model that fails to load is unavailable with its reason, as
// at boot, and the others serve on. The answer is the new GET /metadata.
func (s *server) changeModels(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		ctx.Error("POST a worker.ModelsChange", fasthttp.StatusMethodNotAllowed)
		return
	}
	var ch worker.ModelsChange
	if err := json.Unmarshal(ctx.PostBody(), &ch); err != nil {
		ctx.Error("bad models change: "+err.Error(), fasthttp.StatusBadRequest)
		return
	}
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	if s.rt.Spec.Provider == worker.ProviderCUDA {
		// As at boot (load): CUDA may install its signal handlers over
		// the Go runtime's while it creates and warms up a session.
		defer ort.KeepGoSignalHandlers()()
	}
	cur := s.cat.Load()
	next := newCatalog()
	var obs observers
	var added []string
	for _, m := range ch.Models {
		if mod, ok := cur.models[m.Name]; ok {
			next.models[m.Name] = mod
			next.status = append(next.status, statusOf(cur, m.Name))
			continue
		}
		if reason, ok := cur.unavailable[m.Name]; ok && hasStatus(cur, m.Name) {
			// Unchanged, and failed at boot: it stays as it failed (the
			// master replaces the worker for a changed one).
			next.unavailable[m.Name] = reason
			next.status = append(next.status, statusOf(cur, m.Name))
			continue
		}
		st, _ := s.loadModel(next, m, ch.Unavailable, obs.add(s.rt.Slot(), slices.Index(ch.Slots, m.Name)))
		next.status = append(next.status, st)
		added = append(added, m.Name)
	}
	var retired []*model
	for name, mod := range cur.models {
		if _, kept := next.models[name]; !kept {
			retired = append(retired, mod)
			next.unavailable[name] = fmt.Sprintf("model %q was retired by a reload", name)
		}
	}
	if err := next.seal(); err != nil {
		ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
		return
	}
	s.cat.Store(next)
	obs.arm()
	for _, m := range retired {
		m.close() // requests it holds finish; later ones get ErrClosed (503)
	}
	s.log.Info().Strs("added", added).Int("retired", len(retired)).Int("models", len(next.models)).
		Msg("models changed in place by a reload")
	ctx.SetContentType("application/json")
	ctx.SetBody(next.metaJSON)
}

func statusOf(c *catalog, name string) worker.ModelStatus {
	for _, st := range c.status {
		if st.Name == name {
			return st
		}
	}
	return worker.ModelStatus{}
}

func hasStatus(c *catalog, name string) bool {
	return slices.ContainsFunc(c.status, func(st worker.ModelStatus) bool { return st.Name == name })
}
