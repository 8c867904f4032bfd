package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Triton's model repository extension over HTTP: POST /v2/repository/index,
// POST /v2/repository/models/{m}/load and .../unload. The master answers
// them itself (they change its config, not a worker's), under the same
// header-time admission as every route: the API key, a POST, a body of at
// most maxRepositoryBody bytes with a Content-Length, held under
// limits.max_in_flight and the body budget, read under limits.body_timeout.
// A client that goes away during a load or unload does not cancel it.
// repository.go says what the state they change is.

const repositoryPrefix = "/v2/repository/"

// maxRepositoryBody bounds a repository request's body: an index filter or
// a load's config override is a few hundred bytes.
const maxRepositoryBody = 64 << 10

var errRepositoryBodyTooLarge = fmt.Errorf("the request body is larger than the repository routes take (%d bytes)", maxRepositoryBody)

// repositoryRoute is what a path under /v2/repository/ names: the index,
// or a model and "load" or "unload".
type repositoryRoute struct{ model, action string }

// parseRepositoryRoute reads a path under /v2/repository/; ok is false
// for any other shape.
func parseRepositoryRoute(path string) (r repositoryRoute, ok bool) {
	rest, _ := strings.CutPrefix(path, repositoryPrefix)
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

// decideRepository admits a repository request from its header: 404 for
// a path of no route, 405 for a method other than POST, the API key, and
// 413 for a declared body over maxRepositoryBody.
func (m *Master) decideRepository(h *fasthttp.RequestHeader, path string, v *verdict) *verdict {
	if _, ok := parseRepositoryRoute(path); !ok {
		v.refusal = refusal{status: fasthttp.StatusNotFound, msg: fmt.Sprintf("no route for %q (the repository routes are POST /v2/repository/index and POST /v2/repository/models/{m}/load or /unload)", path)}
		return v
	}
	if method := string(h.Method()); method != fasthttp.MethodPost {
		v.refusal = refusal{status: fasthttp.StatusMethodNotAllowed, header: fasthttp.HeaderAllow, value: fasthttp.MethodPost,
			msg: fmt.Sprintf("method %s is not allowed on %q; use POST", method, path)}
		return v
	}
	if v.refusal = m.keys.Load().verify(h, path); v.status != 0 {
		return v
	}
	switch {
	case v.length > maxRepositoryBody:
		v.refusal = refusal{status: fasthttp.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("request body of %d bytes is larger than the repository routes take (%d)", v.length, maxRepositoryBody)}
	case v.length < 0:
		v.refusal = refusal{status: fasthttp.StatusLengthRequired,
			msg: "the repository routes take a body with a Content-Length, not a chunked one"}
	default:
		// A place under max_in_flight, and the body in the body budget,
		// as for inference: bodies held by the master stay bounded.
		v.refusal = m.hold(m.cfg(), v)
	}
	return v
}

// serveRepository answers a repository route admitted by decideRepository.
func (m *Master) serveRepository(ctx *fasthttp.RequestCtx) {
	route, _ := parseRepositoryRoute(string(ctx.Path()))
	body, err := readRepositoryBody(ctx, m.cfg())
	if err != nil {
		ctx.SetConnectionClose()
		status := fasthttp.StatusBadRequest
		if errors.Is(err, errRepositoryBodyTooLarge) {
			status = fasthttp.StatusRequestEntityTooLarge
		} else if errors.Is(err, errBodyTimeout) {
			status = fasthttp.StatusRequestTimeout
		}
		m.reply(ctx, status, err.Error())
		return
	}
	var status int
	var msg string
	switch route.action {
	case "index":
		status, msg = m.repositoryIndex(ctx, body)
	case "load":
		status, msg = m.repositoryLoad(route.model, body)
	default:
		status, msg = m.repositoryUnload(route.model, body)
	}
	if status != fasthttp.StatusOK || msg != "" {
		m.reply(ctx, status, msg)
	}
}

// readRepositoryBody reads a repository request's body, at most
// maxRepositoryBody bytes, by limits.body_timeout from now.
func readRepositoryBody(ctx *fasthttp.RequestCtx, c *config.Config) ([]byte, error) {
	if ctx.Request.Header.ContentLength() == 0 {
		return nil, nil
	}
	r := ctx.RequestBodyStream()
	if r == nil {
		return ctx.Request.Body(), nil
	}
	if err := ctx.Conn().SetReadDeadline(time.Now().Add(c.Limits.BodyTimeout.Duration)); err != nil {
		return nil, fmt.Errorf("%w: %v", errBodyBroken, err)
	}
	b, err := io.ReadAll(io.LimitReader(r, maxRepositoryBody+1))
	switch {
	case isTimeoutErr(err):
		return nil, errBodyTimeout
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errBodyBroken, err)
	case len(b) > maxRepositoryBody:
		return nil, errRepositoryBodyTooLarge
	}
	return b, nil
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
