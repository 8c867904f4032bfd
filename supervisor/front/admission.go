package front

import (
	"bytes"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/internal/handoff"
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
	proxied  bool   // through the lb to a prep worker
	model    string // the route's model ("" for none), for the poison quarantine
	hasBody  bool   // the client declared a body (Content-Length > 0 or chunked)
	length   int64  // declared Content-Length; -1 = chunked
	inFlight bool   // holds a place under limits.max_in_flight
	// bodyCharge holds the body's bytes in the body budget (its
	// declared length, or a chunked body's first MiB); largeCharge a
	// chunked body's bytes past its first MiB, in the large lane.
	bodyCharge, largeCharge *budget.Charge
	deadline                time.Time         // the client's X-Request-Timeout; zero = none
	admitted                time.Time         // when the header was decided; the body timeout runs from here
	body                    bodyBuf           // the received body (receiveBody); freed by finish
	bodyOn                  *fasthttp.Request // the request body is set on; detached by finish

	// answerCharge holds the answer's bytes (answerGate) until
	// holdAnswer hands it to the response; finish gives it back.
	// answerRefusal answers an answer answerGate refused; nil: none.
	answerCharge  *budget.Charge
	answerRefusal *admission.Refusal
}

// admissions carries verdicts from the header hook to the handler; see
// above. In fasthttp v1.74.0 every path after the hook reaches the handler
// or the error handler, save one: setting the connection's read deadline
// for the body fails (the connection is already closed). A verdict left
// behind that way is finished when the same RequestCtx (pooled, reused by
// later connections) reads its next header.
type admissions struct {
	m handoff.Map[fasthttp.RequestHeader, *verdict]
}

func (a *admissions) put(h *fasthttp.RequestHeader, v *verdict) (stale *verdict) {
	stale, _ = a.m.Swap(h, v)
	return stale
}

func (a *admissions) take(h *fasthttp.RequestHeader) *verdict {
	v, _ := a.m.Take(h)
	return v
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
	if model, ok := tracePath(path); ok {
		return f.decideTrace(c, h, path, model, v) // trace.go
	}
	if path == sysshm.Prefix || strings.HasPrefix(path, sysshm.Prefix+"/") {
		return f.decideSharedMemory(h, path, v) // sharedmemory.go
	}
	var route v2.Route
	v.Refusal, route, v.proxied = admission.Route(c, h, path)
	v.model = route.Model
	if f.opts.ServedName != nil && route.Model != "" {
		v.model = f.opts.ServedName(route) // a version's own quarantine
	}
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
//
// A plain origin-form URI ("/v2/models/m/infer", with or without a
// query) needs no normalizing: its path is its bytes up to '?'. That is
// nearly every request, and parsing it into a pooled URI cost a quarter
// of the header-time decision; anything with '%', '.', '#', '\\', "//"
// or not starting with '/' takes fasthttp's parse
// (TestRequestPathMatchesFasthttp).
func requestPath(h *fasthttp.RequestHeader) string {
	if p, ok := plainPath(h.RequestURI()); ok {
		return string(p)
	}
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	if err := u.Parse(h.Host(), h.RequestURI()); err != nil {
		return ""
	}
	return string(u.Path())
}

// plainPath is uri's path when uri is plain origin-form (see
// requestPath), or false.
func plainPath(uri []byte) ([]byte, bool) {
	if len(uri) == 0 || uri[0] != '/' {
		return nil, false
	}
	path := uri
	if q := bytes.IndexByte(uri, '?'); q >= 0 {
		path = uri[:q]
	}
	prev := byte(0)
	for _, c := range path {
		switch {
		case c == '%', c == '.', c == '#', c == '\\', c == '/' && prev == '/':
			return nil, false
		}
		prev = c
	}
	return path, true
}

// hold takes the request's place under max_in_flight and reserves its
// declared body in the budget; either failing is a 503 with Retry-After,
// and nothing is held.
func (f *Front) hold(c *config.Config, v *verdict) admission.Refusal {
	if r := f.adm.TakeInFlight(c); r.Status != 0 {
		return r
	}
	v.inFlight = true
	charge, r := f.adm.ReserveDeclared(v.length)
	if r.Status != 0 {
		f.finish(v)
		return r
	}
	v.bodyCharge = charge
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
// request's charges and its answer's.
func (f *Front) releaseCharges(v *verdict) {
	v.bodyCharge.Release()
	v.largeCharge.Release()
	v.answerCharge.Release()
	v.bodyCharge, v.largeCharge, v.answerCharge = nil, nil, nil
}

// chargeChunked makes v's charges hold total bytes of its chunked body:
// its first MiB (admission.SmallBodyBytes) as a small body, the rest as
// a large one, as the bodies it could have declared would be.
func (f *Front) chargeChunked(v *verdict, total int64) error {
	if total <= admission.SmallBodyBytes {
		return growCharge(f.adm.Bodies(), &v.bodyCharge, total, total)
	}
	return growCharge(f.adm.Bodies(), &v.largeCharge, total-v.bodyCharge.Bytes(), total)
}

// growCharge makes *c hold to bytes of a body total bytes long: a new
// charge in the body's lane, or its charge grown.
func growCharge(b *admission.Bodies, c **budget.Charge, to, total int64) error {
	if *c != nil {
		return (*c).Grow(to)
	}
	n, err := b.Reserve(to, total)
	if err == nil {
		*c = n
	}
	return err
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
