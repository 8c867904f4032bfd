package front

import (
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
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
	admission.Refusal
	proxied  bool              // through the lb to a prep worker
	model    string            // the route's model ("" for none), for the poison quarantine
	hasBody  bool              // the client declared a body (Content-Length > 0 or chunked)
	length   int64             // declared Content-Length; -1 = chunked
	inFlight bool              // holds a place under limits.max_in_flight
	reserved int64             // body-budget bytes held
	large    int64             // of reserved, those held for a large body (admission.BodyBudget)
	deadline time.Time         // the client's X-Request-Timeout; zero = none
	admitted time.Time         // when the header was decided; the body timeout runs from here
	body     bodyBuf           // the received body (receiveBody); freed by finish
	bodyOn   *fasthttp.Request // the request body is set on; detached by finish

	// answer is the body-budget bytes held for the answer
	// (answerGate); finish gives them back. answerRefusal answers an
	// answer answerGate refused; nil: none.
	answer        int64
	answerRefusal *admission.Refusal
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
	if v.Status != 0 {
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
	if v.length == -1 && admission.DeclaresLength(h.RawHeaders()) {
		v.Refusal = admission.BothLengths
		return v
	}
	path := requestPath(h)
	// The key before the route: a client without one learns nothing of
	// what is served (an unknown model's 404 against a known one's 401
	// would list the models to anyone).
	if v.Refusal = f.adm.Verify(h, path); v.Status != 0 {
		return v
	}
	if strings.HasPrefix(path, RepositoryPrefix) {
		return f.decideRepository(h, path, v) // repository.go
	}
	if path == LoggingPath {
		return f.decideLogging(h, v) // logging.go
	}
	if path == sysshm.Prefix || strings.HasPrefix(path, sysshm.Prefix+"/") {
		return f.decideSharedMemory(h, path, v) // sharedmemory.go
	}
	var route v2.Route
	v.Refusal, route, v.proxied = admission.Route(c, h, path)
	v.model = route.Model
	if v.Status != 0 {
		return v
	}
	if v.Refusal = admission.BodyAllowed(c, route, v.hasBody, v.length); v.Status != 0 || !v.proxied {
		return v
	}
	if v.Refusal = admission.EncodingAllowed(route, h); v.Status != 0 {
		return v
	}
	if v.Refusal = f.adm.Ready(); v.Status != 0 {
		return v
	}
	deadline, err := admission.ClientDeadline(h)
	if err != nil {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusBadRequest, Msg: err.Error()}
		return v
	}
	v.deadline = deadline
	v.Refusal = f.hold(c, v)
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

// hold takes the request's place under max_in_flight and reserves its
// declared body in the budget; either failing is a 503 with Retry-After,
// and nothing is held.
func (f *Front) hold(c *config.Config, v *verdict) admission.Refusal {
	if r := f.adm.TakeInFlight(c); r.Status != 0 {
		return r
	}
	v.inFlight = true
	if r := f.adm.ReserveDeclared(c, v.length); r.Status != 0 {
		f.finish(v)
		return r
	}
	v.reserved = max(v.length, 0)
	v.large = admission.LargePart(v.reserved, v.length)
	return admission.Refusal{}
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
		f.adm.ReleaseInFlight()
		v.inFlight = false
	}
	f.releaseCharges(v)
}

// releaseCharges gives back what v holds of the body budget: its
// request's charge (with its large part) and its answer's.
func (f *Front) releaseCharges(v *verdict) {
	f.adm.Budget.Release(v.reserved, v.large)
	f.adm.Budget.ReleaseAnswer(v.answer)
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
