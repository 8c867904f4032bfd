package front

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The model repository routes (Triton's repository extension: POST
// /v2/repository/index, POST /v2/repository/models/{m}/load and
// .../unload) are answered by the master itself, through Repository, under
// the same header-time admission as every route: the API key, a POST, a
// body of at most MaxRepositoryBody bytes with a Content-Length (or none
// at all, as tritonclient sends an index or a load), held
// under limits.max_in_flight and the body budget, read whole by the front
// under limits.body_timeout before Repository sees it.

// RepositoryPrefix is the path prefix of the repository routes.
const RepositoryPrefix = "/v2/repository/"

// MaxRepositoryBody bounds a repository request's body: an index filter
// or a load's config override is a few hundred bytes.
const MaxRepositoryBody = 64 << 10

// Repository answers the repository routes.
type Repository interface {
	// Routes reports whether path (under RepositoryPrefix) names one of
	// its routes; any other path gets 404 from its header.
	Routes(path string) bool
	// ServeRepository answers an admitted request whose body (at most
	// MaxRepositoryBody bytes, nil when empty) is read: it may write ctx's
	// response itself and return 200 and "", or return a status and a
	// message the front answers as a V2 error.
	ServeRepository(ctx *fasthttp.RequestCtx, body []byte) (status int, msg string)
}

var errRepositoryBodyTooLarge = fmt.Errorf("the request body is larger than the repository routes take (%d bytes)", MaxRepositoryBody)

// decideRepository admits a repository request from its header, once
// decide has checked its API key: 404 for a path of no route, 405 for a
// method other than POST, and 413 for a declared body over
// MaxRepositoryBody.
func (f *Front) decideRepository(h *fasthttp.RequestHeader, path string, v *verdict) *verdict {
	if f.opts.Repository == nil || !f.opts.Repository.Routes(path) {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusNotFound, Msg: fmt.Sprintf("no route for %q (the repository routes are POST /v2/repository/index and POST /v2/repository/models/{m}/load or /unload)", path)}
		return v
	}
	if method := string(h.Method()); method != fasthttp.MethodPost {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusMethodNotAllowed, Header: fasthttp.HeaderAllow, Value: fasthttp.MethodPost,
			Msg: fmt.Sprintf("method %s is not allowed on %q; use POST", method, path)}
		return v
	}
	v.Refusal = f.holdMasterBody(v, "the repository routes", MaxRepositoryBody)
	return v
}

// holdMasterBody admits the body of a route the master answers itself
// (repository, shared memory): 413 over max bytes, 411 for a chunked one,
// else a place under max_in_flight and the body in the body budget, as
// for inference, so bodies held by the master stay bounded. No
// Content-Length and no chunked body (-2) is a request without a body
// (RFC 9112 6.3), as tritonclient sends an index or a load: admitted.
func (f *Front) holdMasterBody(v *verdict, routes string, max int64) admission.Refusal {
	switch {
	case v.length > max:
		return admission.Refusal{Status: fasthttp.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf("request body of %d bytes is larger than %s take (%d)", v.length, routes, max)}
	case v.length == -1:
		return admission.Refusal{Status: fasthttp.StatusLengthRequired,
			Msg: routes + " take a body with a Content-Length, not a chunked one"}
	}
	return f.hold(f.cfg(), v)
}

// serveRepository answers a repository route admitted by decideRepository.
func (f *Front) serveRepository(ctx *fasthttp.RequestCtx) {
	body, ok := f.readMasterBody(ctx)
	if !ok {
		return
	}
	status, msg := f.opts.Repository.ServeRepository(ctx, body)
	if status != fasthttp.StatusOK || msg != "" {
		f.reply(ctx, status, msg)
	}
}

// readRepositoryBody reads a repository request's body, at most
// MaxRepositoryBody bytes, by limits.body_timeout from now.
func readRepositoryBody(ctx *fasthttp.RequestCtx, c *config.Config) ([]byte, error) {
	if n := ctx.Request.Header.ContentLength(); n == 0 || n == -2 { // -2: no Content-Length, no body
		return nil, nil
	}
	r := ctx.RequestBodyStream()
	if r == nil {
		return ctx.Request.Body(), nil
	}
	if err := ctx.Conn().SetReadDeadline(time.Now().Add(c.Limits.BodyTimeout.Duration)); err != nil {
		return nil, fmt.Errorf("%w: %v", errBodyBroken, err)
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxRepositoryBody+1))
	switch {
	case isTimeoutErr(err):
		return nil, errBodyTimeout
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errBodyBroken, err)
	case len(b) > MaxRepositoryBody:
		return nil, errRepositoryBodyTooLarge
	}
	return b, nil
}

// readMasterBody reads the body of a route the master answers itself
// (repository, logging) within MaxRepositoryBody; on failure it answers
// 400, 413 or 408, closes the connection and says !ok.
func (f *Front) readMasterBody(ctx *fasthttp.RequestCtx) (body []byte, ok bool) {
	body, err := readRepositoryBody(ctx, f.cfg())
	if err == nil {
		return body, true
	}
	ctx.SetConnectionClose()
	status := fasthttp.StatusBadRequest
	if errors.Is(err, errRepositoryBodyTooLarge) {
		status = fasthttp.StatusRequestEntityTooLarge
	} else if errors.Is(err, errBodyTimeout) {
		status = fasthttp.StatusRequestTimeout
	}
	f.reply(ctx, status, err.Error())
	return nil, false
}
