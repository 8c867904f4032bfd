package v2

import (
	"fmt"
	"net/http"
	"strings"
)

// Route is what a KServe V2 path under /v2/models/ names: a model (""
// for the statistics of every model) and what is asked of it.
type Route struct {
	// Model is the model's name; "" for /v2/models/stats.
	Model string
	// Action is "" (metadata), "ready", "infer", "stats" or "config"
	// (Triton's model configuration extension).
	Action string
	// Version is the {v} of /versions/{v}; "" when the path names none.
	Version string
}

// PickServed is the served name (versions.go) of the version r asks for
// among served, the served names of r.Model (one file: [name]; a versions
// list: name@v for each version served), ready saying which serve now.
// A route that names a version gets that one; one that names none gets
// the highest ready version, Triton's rule (the highest of all when none
// is ready, so that its answer says why). msg is the message for a
// version r.Model does not serve ("" when one is picked), to answer with
// NotServedStatus, as Triton answers a version it does not serve rather
// than another.
func (r Route) PickServed(served []string, ready func(string) bool) (name, msg string) {
	if r.Version != "" {
		var have []string
		for _, s := range served {
			_, v := SplitServedName(s)
			if CompareVersions(v, r.Version) == 0 { // as numbers: "02" is 2, as Triton reads it
				return s, ""
			}
			have = append(have, v)
		}
		return "", fmt.Sprintf("model %q has no version %q: it serves version %s (or name no version for the highest ready one)",
			r.Model, r.Version, strings.Join(have, ", "))
	}
	best, bestReady := "", false
	for _, s := range served {
		ok := ready == nil || ready(s)
		if best == "" || (ok && !bestReady) || (ok == bestReady && CompareVersions(versionOf(s), versionOf(best)) > 0) {
			best, bestReady = s, ok
		}
	}
	return best, ""
}

func versionOf(served string) string {
	_, v := SplitServedName(served)
	return v
}

// NotServedStatus is the status for a route naming a model (or a version)
// that is not served: 404, except on the ready route, where it is 400, as
// Triton answers readiness for any model that is not ready, one it has
// never heard of included (tritonclient's is_model_ready is then False).
func (r Route) NotServedStatus() int {
	if r.Action == "ready" {
		return http.StatusBadRequest
	}
	return http.StatusNotFound
}

// Method is the HTTP method the route takes: POST for infer, GET (and
// so HEAD) for the rest.
func (r Route) Method() string {
	if r.Action == "infer" {
		return "POST"
	}
	return "GET"
}

// TakesBody reports whether a request on the route carries a body.
func (r Route) TakesBody() bool { return r.Action == "infer" }

// ParseRoute reads /v2/models/{name}[/versions/{v}][/ready|/infer|/stats|/config]
// and /v2/models/stats; ok is false for any other path. It checks the
// shape of the path only, not whether the model exists. The master uses it
// to refuse a request from its header, before any of its body is read.
func ParseRoute(path string) (r Route, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v2/models/")
	if !ok || rest == "" {
		return Route{}, false
	}
	if rest == "stats" {
		return Route{Action: "stats"}, true
	}
	name, action, _ := strings.Cut(rest, "/")
	var version string
	if v, versioned := strings.CutPrefix(action, "versions/"); versioned {
		version, action, _ = strings.Cut(v, "/")
		if version == "" {
			return Route{}, false
		}
	}
	switch action {
	case "", "ready", "infer", "stats", "config":
		return Route{Model: name, Action: action, Version: version}, name != ""
	}
	return Route{}, false
}
