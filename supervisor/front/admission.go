package front

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// A public request is decided from its header alone, in fasthttp's
// HeaderReceived hook, before a byte of its body is read: API key and
// its rate limit (first, so that without a key every route answers the
// same 401), route, method, Content-Length against max_body_bytes,
// Content-Encoding (415 unless identity, gzip or deflate), readiness,
// X-Request-Timeout, max_in_flight and the body budget. A refused request
// never gets a body buffer; its body is left unread on a connection that
// is closed once the refusal is written.
//
// fasthttp's hook sees only the header, so the verdict reaches the
// handler (or the error handler, when the connection fails before the
// handler runs) through admissions, keyed by the header's address: the
// RequestCtx that owns it serves one request of one connection at a time.

// verdict is what the header decided for one request. An admitted verdict
// may hold a max_in_flight place and body-budget bytes: whoever takes it
// from admissions must finish it.
type verdict struct {
	refusal
	proxied  bool              // through the lb to a prep worker
	model    string            // the route's model ("" for none), for the poison quarantine
	hasBody  bool              // the client declared a body (Content-Length > 0 or chunked)
	length   int64             // declared Content-Length; -1 = chunked
	inFlight bool              // holds a place under limits.max_in_flight
	reserved int64             // body-budget bytes held
	large    int64             // of reserved, those held for a large body (bodyBudget.large)
	deadline time.Time         // the client's X-Request-Timeout; zero = none
	admitted time.Time         // when the header was decided; the body timeout runs from here
	body     bodyBuf           // the received body (receiveBody); freed by finish
	bodyOn   *fasthttp.Request // the request body is set on; detached by finish

	// answer is the body-budget bytes held for the answer
	// (answerGate); finish gives them back. answerRefusal answers an
	// answer answerGate refused; nil: none.
	answer        int64
	answerRefusal *refusal
}

// refusal is the answer to a refused request: a status (0 = admitted), a
// V2 error message and at most one extra response header.
type refusal struct {
	status        int
	msg           string
	header, value string
}

// admissions carries verdicts from the header hook to the handler; see
// above. In fasthttp v1.74.0 every path after the hook reaches the handler
// or the error handler, save one: setting the connection's read deadline
// for the body fails (the connection is already closed). A verdict left
// behind that way is finished when the same RequestCtx (pooled, reused by
// later connections) reads its next header.
type admissions struct{ m sync.Map }

func (a *admissions) put(h *fasthttp.RequestHeader, v *verdict) (stale *verdict) {
	old, ok := a.m.Swap(h, v)
	if !ok {
		return nil
	}
	return old.(*verdict)
}

func (a *admissions) take(h *fasthttp.RequestHeader) *verdict {
	v, ok := a.m.LoadAndDelete(h)
	if !ok {
		return nil
	}
	return v.(*verdict)
}

// headerReceived is the public server's HeaderReceived hook: it decides
// the request and tells fasthttp how much of the body to read and for how
// long. A refused request's body is declared empty, so fasthttp reads
// none of it (and sends no 100 Continue).
func (f *Front) headerReceived(h *fasthttp.RequestHeader) (rc fasthttp.RequestConfig) {
	var v *verdict
	defer f.recoverHeader(h, &v)
	c := f.cfg()
	v = f.decide(c, h)
	if stale := f.admissions.put(h, v); stale != nil {
		f.finish(stale)
	}
	rc = fasthttp.RequestConfig{MaxRequestBodySize: int(c.MaxBodyBytes), WriteTimeout: c.Limits.WriteTimeout.Duration}
	if v.status != 0 {
		if v.hasBody {
			h.SetContentLength(0)
			h.Del(fasthttp.HeaderExpect)
		}
		return rc
	}
	if v.hasBody {
		// fasthttp pre-reads up to 8 KiB of the body before the
		// handler runs; the body timeout bounds that read too.
		rc.ReadTimeout = c.Limits.BodyTimeout.Duration
	}
	return rc
}

// decide settles a request from its header. Refusals are cheapest first;
// the resources (a max_in_flight place, body-budget bytes) are taken last,
// and only by a request that passed everything else.
func (f *Front) decide(c *config.Config, h *fasthttp.RequestHeader) *verdict {
	v := &verdict{length: int64(h.ContentLength()), admitted: time.Now()}
	v.hasBody = v.length > 0 || v.length == -1
	if v.length == -1 && declaresLength(h.RawHeaders()) {
		v.refusal = bothLengths // framing.go
		return v
	}
	path := requestPath(h)
	// The key before the route: a client without one learns nothing of
	// what is served (an unknown model's 404 against a known one's 401
	// would list the models to anyone).
	if v.refusal = f.keys.Load().verify(h, path); v.status != 0 {
		return v
	}
	if strings.HasPrefix(path, RepositoryPrefix) {
		return f.decideRepository(h, path, v) // repository.go
	}
	var route v2.Route
	v.refusal, route, v.proxied = routeRequest(c, h, path)
	v.model = route.Model
	if v.status != 0 {
		return v
	}
	if v.refusal = bodyAllowed(c, route, v); v.status != 0 || !v.proxied {
		return v
	}
	if v.refusal = encodingAllowed(route, h); v.status != 0 {
		return v
	}
	if !f.serving.Load() {
		v.refusal = refusal{status: fasthttp.StatusServiceUnavailable, msg: "the server is not ready: workers are starting or stopping"}
		return v
	}
	deadline, err := clientDeadline(h)
	if err != nil {
		v.refusal = refusal{status: fasthttp.StatusBadRequest, msg: err.Error()}
		return v
	}
	v.deadline = deadline
	v.refusal = f.hold(c, v)
	return v
}

// requestPath is the request's path as fasthttp will parse it for the
// handler (percent-decoded, dot segments removed), so that the header-time
// decision and the handler agree on what was asked.
func requestPath(h *fasthttp.RequestHeader) string {
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	if err := u.Parse(h.Host(), h.RequestURI()); err != nil {
		return ""
	}
	return string(u.Path())
}

// routeRequest refuses a request for a route that does not exist (404: a
// model or model version not served too) or a method the route does not
// take (405); proxied is whether the route is
// served by a prep worker.
func routeRequest(c *config.Config, h *fasthttp.RequestHeader, path string) (r refusal, route v2.Route, proxied bool) {
	want := fasthttp.MethodGet
	switch path {
	case "/v2/health/live", "/v2/health/ready", "/v2":
	default:
		var ok bool
		if route, ok = v2.ParseRoute(path); !ok {
			return refusal{status: fasthttp.StatusNotFound, msg: "no route for " + strconv.Quote(path)}, route, false
		}
		if route.Model != "" && !c.ServesModel(route.Model) {
			return refusal{status: route.NotServedStatus(), msg: fmt.Sprintf("unknown model %q", route.Model)}, route, false
		}
		if msg := route.VersionError(); msg != "" {
			return refusal{status: route.NotServedStatus(), msg: msg}, route, false
		}
		want, proxied = route.Method(), true
	}
	method := string(h.Method())
	if method != want && (want != fasthttp.MethodGet || method != fasthttp.MethodHead) {
		return refusal{status: fasthttp.StatusMethodNotAllowed, header: fasthttp.HeaderAllow, value: want,
			msg: fmt.Sprintf("method %s is not allowed on %q; use %s", method, path, want)}, route, proxied
	}
	return refusal{}, route, proxied
}

// bodyAllowed refuses a body on a route that takes none (400) and a
// declared Content-Length over max_body_bytes (413). A chunked body is
// held to max_body_bytes as it arrives.
func bodyAllowed(c *config.Config, route v2.Route, v *verdict) refusal {
	switch {
	case v.hasBody && !route.TakesBody():
		return refusal{status: fasthttp.StatusBadRequest, msg: "this route takes no request body"}
	case v.length > int64(c.MaxBodyBytes):
		return refusal{status: fasthttp.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("request body of %d bytes is larger than max_body_bytes (%d)", v.length, int64(c.MaxBodyBytes))}
	}
	return refusal{}
}

// hold takes the request's place under max_in_flight and reserves its
// declared body in the budget; either failing is a 503 with Retry-After,
// and nothing is held.
func (f *Front) hold(c *config.Config, v *verdict) refusal {
	limit := int64(c.Limits.MaxInFlight)
	if n := f.inFlight.Add(1); limit > 0 && n > limit {
		f.inFlight.Add(-1)
		return refusal{status: fasthttp.StatusServiceUnavailable, header: fasthttp.HeaderRetryAfter, value: "1",
			msg: fmt.Sprintf("server busy: %d requests in flight (limits.max_in_flight); retry later", limit)}
	}
	v.inFlight = true
	if v.length > 0 && !f.budget.reserve(v.length, v.length, c.BodyBudgetLimit()) {
		f.finish(v)
		return refusal{status: fasthttp.StatusServiceUnavailable, header: fasthttp.HeaderRetryAfter, value: "1",
			msg: "server busy: request bodies in flight fill limits.max_body_bytes_in_flight; retry later"}
	}
	v.reserved = max(v.length, 0)
	v.large = largePart(v.reserved, v.length)
	return refusal{}
}

// finish gives back what an admitted verdict holds. It is called once per
// verdict taken from admissions; a second call gives back nothing. A
// verdict that holds a body is the handler's (serveFront finishes it when
// it returns, panicking or not, after the lb and everything else are done
// with the request): the body is detached from the request, then freed
// (see bodyBuf for why nothing can touch it after).
func (f *Front) finish(v *verdict) {
	v.detachBody()
	if v.inFlight {
		f.inFlight.Add(-1)
		v.inFlight = false
	}
	f.releaseCharges(v)
}

// releaseCharges gives back what v holds of the body budget: its
// request's charge (with its large part) and its answer's.
func (f *Front) releaseCharges(v *verdict) {
	f.budget.release(v.reserved, v.large)
	f.budget.releaseAnswer(v.answer)
	v.reserved, v.large, v.answer = 0, 0, 0
}

// attachBody sets the received body on req; the verdict owns it from now.
func (v *verdict) attachBody(req *fasthttp.Request, body bodyBuf) {
	v.body, v.bodyOn = body, req
	req.SetBodyRaw(body.b)
}

// detachBody takes the body off the request it was set on (the handler is
// done with the request's body by then; fasthttp only resets it) and frees
// it.
func (v *verdict) detachBody() {
	if v.bodyOn != nil {
		v.bodyOn.ResetBody()
		v.bodyOn = nil
	}
	v.body.free()
}
