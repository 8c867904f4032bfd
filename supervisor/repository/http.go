package repository

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/front"
)

// Triton's model repository extension over HTTP: POST /v2/repository/index,
// POST /v2/repository/models/{m}/load and .../unload. The master answers
// them itself (they change its config, not a worker's); the front admits
// them from their header and reads their body (supervisor/front
// repository.go) before API.ServeRepository sees it.
// A client that goes away during a load or unload does not cancel it.
// repository.go says what the state they change is.

var _ front.Repository = (*API)(nil)

// repositoryRoute is what a path under /v2/repository/ names: the index,
// or a model and "load" or "unload".
type repositoryRoute struct{ model, action string }

// parseRepositoryRoute reads a path under /v2/repository/; ok is false
// for any other shape.
func parseRepositoryRoute(path string) (r repositoryRoute, ok bool) {
	rest, _ := strings.CutPrefix(path, front.RepositoryPrefix)
	if rest == "index" {
		return repositoryRoute{action: "index"}, true
	}
	rest, found := strings.CutPrefix(rest, "models/")
	name, action, _ := strings.Cut(rest, "/")
	if !found || name == "" || (action != "load" && action != "unload") {
		return r, false
	}
	return repositoryRoute{model: name, action: action}, true
}

// Routes reports whether path names a repository route (front.Repository).
func (r *API) Routes(path string) bool {
	_, ok := parseRepositoryRoute(path)
	return ok
}

// ServeRepository answers a repository route the front admitted, with its
// body read (front.Repository).
func (r *API) ServeRepository(ctx *fasthttp.RequestCtx, body []byte) (status int, msg string) {
	route, _ := parseRepositoryRoute(string(ctx.Path()))
	switch route.action {
	case "index":
		status, msg = r.repositoryIndex(ctx, body)
	case "load":
		status, msg = r.repositoryLoad(route.model, body)
	default:
		status, msg = r.repositoryUnload(route.model, body)
	}
	return status, msg
}

// decodeRepositoryBody decodes a JSON object body into dst; an empty body
// leaves dst as it is (every field of these bodies is optional).
func decodeRepositoryBody(body []byte, dst any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("the request body must be a JSON object as Triton's repository extension defines it: %v", err)
	}
	return nil
}
