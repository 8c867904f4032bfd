package prep

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/inferquery"
	"github.com/supervisor-dev/supervisor/worker/prep/modelcache"
)

// Routing by model. Infer workers need not serve the same models: one that
// failed to load a model (out of memory on its GPU, say) serves the others
// while another worker may serve that one. So the prep worker keeps, per
// infer worker, what its GET /metadata said, and:
//
//   - sends a request for model m only to infer workers that serve m, least
//     connections among them (lb.Proxy.DoAllowed, asked at each pick
//     against the newest routes, so a list that changes mid-request is
//     seen by the next pick, retries included);
//   - calls m available when at least one infer worker serves it, its
//     metadata from one that does; unavailable (503) with the reason of
//     every infer worker when none does;
//   - learns a worker's models once, when it first appears in the list the
//     master PUTs (a worker's socket is its own: a replacement is a new
//     socket), before the new list is published. A replacement therefore
//     joins with its models known in the same atomic swap that drops the
//     worker it replaces, and a model both serve never flaps unavailable.
//     A worker whose metadata could not be read serves nothing here and
//     is asked again at the next PUT.
//   - keeps each model's availability as it was while no infer worker at
//     all has answered (none running: the master restarts them); requests
//     meanwhile get 503 with Retry-After, not a reason.

// inferView is one infer worker as this prep worker sees it.
type inferView struct {
	socket string
	models map[string]worker.ModelStatus // by name, from its GET /metadata
	err    error                         // its metadata could not be read
}

// serves reports whether the worker runs requests for name.
func (v *inferView) serves(name string) bool {
	st, ok := v.models[name]
	return v.err == nil && ok && st.Unavailable == ""
}

// why says why the worker does not serve name.
func (v *inferView) why(name string) string {
	st, ok := v.models[name]
	switch {
	case v.err != nil:
		return "its model metadata could not be read: " + v.err.Error()
	case !ok:
		return "it does not have the model"
	default:
		return st.Unavailable
	}
}

// routes is one immutable snapshot: the infer workers in the master's
// order and every model as this prep worker serves it.
type routes struct {
	views    []*inferView
	bySocket map[string]*inferView
	models   map[string]*model
	// lb is each model's lb route, kept from one snapshot to the next so
	// that its round-robin rotation carries on.
	lb map[string]*lb.Route
	// served are the served names of each model (internal/v2
	// versions.go): [name], or name@v for each of its versions.
	served map[string][]string
}

// pick is the model a route asks for (v2.Route.PickServed: the version it
// names, or the highest ready one), or nil and the message to answer with
// route.NotServedStatus.
func (r *routes) pick(route v2.Route) (*model, string) {
	served := r.served[route.Model]
	if len(served) == 0 {
		return nil, fmt.Sprintf("unknown model %q", route.Model)
	}
	name, msg := route.PickServed(served, func(s string) bool { return r.models[s].unavailable == "" })
	if name == "" {
		return nil, msg
	}
	return r.models[name], ""
}

// readyVersions are the versions of model that serve, lowest first.
func (r *routes) readyVersions(model string) []string {
	var out []string
	for _, s := range r.served[model] {
		if r.models[s].unavailable == "" {
			_, v := v2.SplitServedName(s)
			out = append(out, v)
		}
	}
	slices.SortFunc(out, v2.CompareVersions)
	return out
}

// servedNames groups models' served names by model name.
func servedNames(models map[string]*model) map[string][]string {
	out := map[string][]string{}
	for s := range models {
		name, _ := v2.SplitServedName(s)
		out[name] = append(out[name], s)
	}
	for _, ss := range out {
		slices.SortFunc(ss, func(a, b string) int {
			_, va := v2.SplitServedName(a)
			_, vb := v2.SplitServedName(b)
			return v2.CompareVersions(va, vb)
		})
	}
	return out
}

// serves reports whether the infer worker on socket serves model name.
func (r *routes) serves(socket, name string) bool {
	v := r.bySocket[socket]
	return v != nil && v.serves(name)
}

// sockets lists the infer workers' sockets, in the master's order.
func (r *routes) sockets() []string {
	out := make([]string, len(r.views))
	for i, v := range r.views {
		out[i] = v.socket
	}
	return out
}

// router owns the routes: it reads the infer workers' metadata, builds
// the models from it and publishes both, with the lb's backends.
type router struct {
	cur atomic.Pointer[routes]
	mu  sync.Mutex // serialises updates
	up  *lb.Proxy

	// fetch reads one infer worker's GET /metadata, waiting up to timeout.
	fetch    func(socket string, timeout time.Duration) ([]worker.ModelStatus, error)
	procs    map[string]worker.Processing
	counters map[string]shm.ModelSlot
	gate     *decodegate.Gate // the worker's one decode gate, for every image model
	// caches are the response caches by model, mapped once (worker/prep/modelcache).
	caches map[string]*modelcache.Cache
	// maxBody is max_body_bytes, every request's budget (model.limits).
	maxBody int64
	log     zerolog.Logger
}

func newRouter(up *lb.Proxy, procs []worker.Processing, counters map[string]shm.ModelSlot, log zerolog.Logger) *router {
	r := &router{up: up, fetch: inferquery.Metadata, procs: map[string]worker.Processing{},
		counters: counters, gate: decodegate.New(decodegate.Budget(0, procs)), log: log}
	for _, p := range procs {
		r.procs[p.Model] = p
	}
	r.cur.Store(&routes{bySocket: map[string]*inferView{}, models: map[string]*model{}, lb: map[string]*lb.Route{}})
	return r
}

// model returns the model called name as it serves now.
func (r *router) model(name string) (*model, bool) {
	m, ok := r.cur.Load().models[name]
	return m, ok
}

// route is the lb route of model name (nil for a model it has not seen):
// the infer workers serving it, judged against the newest routes at each
// pick.
func (r *router) route(name string) *lb.Route {
	return r.cur.Load().lb[name]
}

// boot learns the models from the infer workers on sockets. It fails when
// the configured processing of a model does not fit its metadata (a
// config that cannot serve its model is not served half-way), or when no
// infer worker answered by deadline. Until then it asks again, with
// backoff and a longer bound each time (bootFetch): the infer workers may
// be restarting beside this worker (both killed at once) or slow to
// answer on a loaded host (a reload), and waiting for them is what the
// boot is for. A zero deadline asks once.
func (r *router) boot(sockets []string, deadline time.Time) error {
	if len(sockets) == 0 {
		return errors.New("no infer worker sockets in the spec: the master had no infer worker serving within boot_timeout; " +
			"see why in the infer workers' lines of the master's log")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	wait, timeout := bootRetryFirst, inferquery.MetadataTimeout
	for attempt := 1; ; attempt++ {
		if !deadline.IsZero() {
			timeout = max(min(timeout, time.Until(deadline)), time.Millisecond)
		}
		views := r.views(sockets, timeout)
		if anyAnswered(views) {
			models, err := r.models(views, true)
			if err != nil {
				return err
			}
			r.publish(views, models)
			return nil
		}
		err := fmt.Errorf("fetch model metadata: no infer worker answered: %w", views[0].err)
		left := time.Until(deadline)
		if left <= 0 {
			if deadline.IsZero() {
				return err
			}
			return fmt.Errorf("%w (asked %d times over %s, until boot_timeout): check that the infer workers are up (supervisor status) and why they are not in their log lines",
				err, attempt, time.Since(start).Round(time.Millisecond))
		}
		wait = min(wait, left)
		r.log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", wait).
			Msg("waiting for an infer worker to answer (restarting or slow): asking again until boot_timeout")
		time.Sleep(wait)
		wait, timeout = min(2*wait, bootRetryMax), 2*timeout
	}
}

// The boot fetch's backoff between attempts: the first wait, and the
// longest (bootRetryMax keeps a worker that came back from waiting long).
const (
	bootRetryFirst = 100 * time.Millisecond
	bootRetryMax   = 2 * time.Second
)

// update switches to the infer workers on sockets (the master's PUT),
// reading again the models of those on refetch (changed in place).
func (r *router) update(sockets []string, refetch ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	views := r.views(sockets, inferquery.MetadataTimeout, refetch...)
	models := r.cur.Load().models
	if anyAnswered(views) {
		models, _ = r.models(views, false)
	}
	r.publish(views, models)
}

// publish makes views and models current without a moment in which a
// model's requests find no worker: first routes that know the workers of
// both the previous and the next list (next's view wins for a worker in
// both), then the lb's backends, then next's routes alone. The lb never
// offers a worker whose models are not known, and a pick between the two
// stores, with the lb still on the previous list, still finds the
// previous workers allowed: storing next's routes first would refuse
// every previous worker while the lb offers only those, when a list
// replaces every worker at once.
func (r *router) publish(views []*inferView, models map[string]*model) {
	prev := r.cur.Load()
	next := &routes{views: views, bySocket: make(map[string]*inferView, len(views)), models: models, lb: prev.lb, served: servedNames(models)}
	for _, v := range views {
		next.bySocket[v.socket] = v
	}
	for name := range models {
		if next.lb[name] == nil {
			next.lb = r.withRoutes(prev.lb, models)
			break
		}
	}
	r.cur.Store(bridge(prev, next))
	defer r.cur.Store(next)
	for name, m := range models {
		if was := prev.models[name]; was != nil && was.unavailable != m.unavailable {
			if m.unavailable == "" {
				r.log.Info().Str("model", name).Msg("model available again: an infer worker serves it")
			} else {
				r.log.Warn().Str("model", name).Str("reason", m.unavailable).Msg("model unavailable: no infer worker serves it")
			}
		}
	}
	setUpstreams(r.up, next.sockets())
}

// bridge is next, except that the previous routes' workers it dropped
// still serve what they served: the routes in force while the lb's
// backends change over.
func bridge(prev, next *routes) *routes {
	b := *next
	b.bySocket = make(map[string]*inferView, len(prev.bySocket)+len(next.bySocket))
	for s, v := range prev.bySocket {
		b.bySocket[s] = v
	}
	for s, v := range next.bySocket {
		b.bySocket[s] = v
	}
	return &b
}

// withRoutes returns a copy of routes with one added for each model of
// models that has none.
func (r *router) withRoutes(routes map[string]*lb.Route, models map[string]*model) map[string]*lb.Route {
	out := make(map[string]*lb.Route, len(routes)+len(models))
	for k, v := range routes {
		out[k] = v
	}
	for name := range models {
		if out[name] == nil {
			out[name] = lb.NewRoute(func(socket string) bool { return r.cur.Load().serves(socket, name) })
		}
	}
	return out
}

// views returns a view of each socket's infer worker: the current one when
// it was read (and is not on refetch), otherwise read now (all in
// parallel, each waiting up to timeout).
func (r *router) views(sockets []string, timeout time.Duration, refetch ...string) []*inferView {
	cur := r.cur.Load()
	out := make([]*inferView, len(sockets))
	var wg sync.WaitGroup
	for i, s := range sockets {
		if v := cur.bySocket[s]; v != nil && v.err == nil && !slices.Contains(refetch, s) {
			out[i] = v
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := &inferView{socket: s}
			sts, err := r.fetch(s, timeout)
			if err != nil {
				v.err = err
				r.log.Warn().Err(err).Str("infer_socket", s).Msg("could not read an infer worker's models: it gets no request until the master lists it again")
			} else {
				v.models = make(map[string]worker.ModelStatus, len(sts))
				for _, st := range sts {
					v.models[st.Name] = st
				}
			}
			out[i] = v
		}()
	}
	wg.Wait()
	return out
}

func anyAnswered(views []*inferView) bool {
	for _, v := range views {
		if v.err == nil {
			return true
		}
	}
	return false
}

// models builds every model the views or the current routes know. With
// strict (boot), processing settings for a model no infer worker knows,
// or that do not fit a model's metadata, are an error; otherwise such a
// model is unavailable with that reason.
func (r *router) models(views []*inferView, strict bool) (map[string]*model, error) {
	prev := r.cur.Load().models
	names := map[string]bool{}
	for name := range prev {
		names[name] = true
	}
	for _, v := range views {
		for name := range v.models {
			names[name] = true
		}
	}
	if strict {
		for name := range r.procs {
			if !names[name] {
				return nil, fmt.Errorf("model %q has preprocess or postprocess settings but the infer workers do not serve it", name)
			}
		}
	}
	out := make(map[string]*model, len(names))
	for name := range names {
		m, err := r.build(name, views, prev[name])
		if err != nil {
			if strict {
				return nil, err
			}
			r.log.Error().Err(err).Str("model", name).Msg("model unavailable: its processing settings do not fit the metadata an infer worker declares")
		}
		out[name] = m
	}
	return out, nil
}

// build makes the model called name from the first view that serves it,
// reusing prev when nothing it was made from changed. On an error in the
// model's processing settings it returns the model unavailable, and the
// error.
func (r *router) build(name string, views []*inferView, prev *model) (*model, error) {
	for _, v := range views {
		if !v.serves(name) {
			continue
		}
		md := v.models[name].Metadata
		if prev != nil && prev.unavailable == "" && reflect.DeepEqual(prev.md, md) {
			return prev, nil
		}
		m := r.newModel(md, "")
		if p, ok := r.procs[name]; ok {
			if err := m.process(p, r.gate, r.log); err != nil {
				return r.newModel(md, err.Error()), err
			}
		}
		m.cache = r.caches[name]
		return m, nil
	}
	reason := reasons(name, views)
	if prev != nil && prev.unavailable == reason {
		return prev, nil
	}
	md := tensor.Metadata{Name: name}
	for _, v := range views {
		if st, ok := v.models[name]; ok {
			md = st.Metadata
			break
		}
	}
	return r.newModel(md, reason), nil
}

func (r *router) newModel(md tensor.Metadata, unavailable string) *model {
	return &model{md: md, api: md, metaJSON: v2.AppendModelMetadata(nil, &md),
		counters: r.counters[md.Name], unavailable: unavailable, maxBody: r.maxBody}
}

// reasons says why no view serves name: the one reason when every infer
// worker gives the same, else each worker's, by socket file name.
func reasons(name string, views []*inferView) string {
	if len(views) == 0 {
		return "no infer worker is running"
	}
	first := views[0].why(name)
	same := true
	parts := make([]string, len(views))
	for i, v := range views {
		w := v.why(name)
		same = same && w == first
		parts[i] = fmt.Sprintf("infer worker %s: %s", filepath.Base(v.socket), w)
	}
	if same {
		return first
	}
	return strings.Join(parts, "; ")
}
