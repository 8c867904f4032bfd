package prep

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/arena"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/tracing"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/answercost"
	"github.com/supervisor-dev/supervisor/worker/prep/modelcache"
	"github.com/supervisor-dev/supervisor/worker/prep/schedule"
)

// headerLenHeader is Triton's binary tensor extension header.
const headerLenHeader = "Inference-Header-Content-Length"

type handler struct {
	routes  *router // the models and which infer workers serve each
	up      *lb.Proxy
	timeout time.Duration
	log     zerolog.Logger
	arena   *arena.Arena    // nil: tensors go inline
	board   *shm.Slot       // this worker's scoreboard slot; nil without one
	bodies  *bodyDecoder    // compressed request bodies (encoding.go)
	tracer  *tracing.Tracer // nil: tracing off (trace.go)

	// arenaRefusedLogged is set once an infer worker's refusal of the
	// arena has been logged (resendInline).
	arenaRefusedLogged atomic.Bool
}

// serve routes /v2/models/{name}[/versions/{v}][/ready|/infer|/stats|/config].
func (h *handler) serve(ctx *fasthttp.RequestCtx) {
	if string(ctx.Path()) == worker.UpstreamsPath {
		h.setUpstreams(ctx)
		return
	}
	route, ok := v2.ParseRoute(string(ctx.Path()))
	if !ok {
		writeError(ctx, fasthttp.StatusNotFound, fmt.Sprintf("no route for %q", ctx.Path()))
		return
	}
	if route.Model == "" { // Triton's statistics of every model
		if h.allow(ctx, route.Method()) {
			h.stats(ctx, nil)
		}
		return
	}
	action := route.Action
	rs := h.routes.cur.Load()
	m, msg := rs.pick(route)
	if m == nil {
		writeError(ctx, route.NotServedStatus(), msg)
		return
	}
	if m.unavailable != "" && action != "stats" {
		h.unavailable(ctx, m, action)
		return
	}
	if !h.allow(ctx, route.Method()) {
		return
	}
	switch action {
	case "":
		ctx.SetContentType("application/json")
		if route.Version == "" && v2.IsVersioned(m.md.Name) {
			// Triton lists every ready version when asked for none.
			ctx.SetBody(v2.AppendModelMetadataVersions(nil, &m.api, rs.readyVersions(route.Model)))
			return
		}
		ctx.SetBody(m.metaJSON)
	case "ready":
		ctx.SetStatusCode(fasthttp.StatusOK)
	case "infer":
		if ctx.Request.Header.Peek(worker.PrefixHeader) != nil {
			h.precheck(ctx, m) // the master's, not a request of the model
			return
		}
		start := time.Now()
		pt := h.beginTrace(ctx, m.md.Name, start) // trace.go; nil: not traced
		if release, ok := h.bodies.decode(ctx); ok {
			h.infer(ctx, m)
			h.deliver(ctx) // outputs asked into regions (regions.go)
			release()
			h.compressGated(ctx)
		}
		pt.end(ctx)
		m.counters.RequestFinished(time.Since(start), worker.FailureOf(ctx.Response.StatusCode()))
	case "stats":
		if route.Version != "" {
			h.stats(ctx, []string{m.md.Name})
		} else {
			h.stats(ctx, rs.served[route.Model]) // every version, as Triton's
		}
	case "config":
		h.config(ctx, m)
	}
}

// describeModel names a served model in messages: `model "mlp"`, or
// `model "mlp" version 2` for a version of a model with a versions list.
func describeModel(served string) string {
	name, version := v2.SplitServedName(served)
	if !v2.IsVersioned(served) {
		return fmt.Sprintf("model %q", name)
	}
	return fmt.Sprintf("model %q version %s", name, version)
}

// unavailable answers a route of a model that failed to load or warm up:
// 503 with the reason (Triton's answer for a model that is not ready), an
// infer request counted as failed. Unknown routes still get 404.
func (h *handler) unavailable(ctx *fasthttp.RequestCtx, m *model, action string) {
	switch action {
	case "", "ready", "infer", "config":
	default:
		writeError(ctx, fasthttp.StatusNotFound, fmt.Sprintf("no route for %q", ctx.Path()))
		return
	}
	writeError(ctx, fasthttp.StatusServiceUnavailable, fmt.Sprintf("%s is unavailable: %s", describeModel(m.md.Name), m.unavailable))
	if action == "infer" {
		m.counters.RequestFinished(0, worker.FailureOf(fasthttp.StatusServiceUnavailable))
	}
}

// setUpstreams is the master's PUT of the current infer worker sockets.
func (h *handler) setUpstreams(ctx *fasthttp.RequestCtx) {
	if !h.allow(ctx, fasthttp.MethodPut) {
		return
	}
	var sockets []string
	if err := json.Unmarshal(ctx.PostBody(), &sockets); err != nil {
		writeError(ctx, fasthttp.StatusBadRequest, "want a JSON array of socket paths: "+err.Error())
		return
	}
	var refetch []string
	for _, s := range ctx.QueryArgs().PeekMulti("refetch") {
		refetch = append(refetch, string(s))
	}
	h.routes.update(sockets, refetch...)
	h.log.Info().Strs("infer_sockets", sockets).Msg("infer workers updated")
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// allow answers 405 with an Allow header unless the method is want (GET
// routes also take HEAD).
func (h *handler) allow(ctx *fasthttp.RequestCtx, want string) bool {
	m := string(ctx.Method())
	if m == want || (want == fasthttp.MethodGet && m == fasthttp.MethodHead) {
		return true
	}
	ctx.Response.Header.Set("Allow", want)
	writeError(ctx, fasthttp.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %q; use %s", m, ctx.Path(), want))
	return false
}

func (h *handler) infer(ctx *fasthttp.RequestCtx, m *model) {
	if m.image != nil {
		h.inferImages(ctx, m)
		return
	}
	if isImageBody(ctx) {
		writeV2Error(ctx, notImageModel(ctx, m))
		return
	}
	pt := h.traceOf(ctx)
	t0 := pt.now()
	req, err := decodeV2(ctx, m.limits(), h.board)
	if err == nil {
		err = req.Validate(&m.api)
	}
	pt.stage("prep.parse", t0)
	if err != nil {
		writeV2Error(ctx, err)
		return
	}
	t0 = pt.now()
	key, hit := h.lookup(ctx, m, req, req.Inputs)
	pt.cache(t0, hit)
	if hit {
		return
	}
	if !h.reserveAnswer(ctx, answercost.Expected(m.md.Outputs, req)) { // before the infer worker runs it
		refuseAnswer(ctx)
		return
	}
	outs, model, status, err := h.forward(ctx, m, req)
	if err != nil {
		writeError(ctx, status, err.Error())
		return
	}
	h.respond(ctx, m, req, outs, key, model)
}

// notImageModel is the error for an image body sent to a tensor model.
func notImageModel(ctx *fasthttp.RequestCtx, m *model) error {
	return &v2.Error{Status: fasthttp.StatusBadRequest, Msg: fmt.Sprintf(
		"model %q takes V2 tensors, not image bodies (Content-Type %q); its config has no preprocess kind: image",
		m.md.Name, ctx.Request.Header.ContentType())}
}

// decodeV2 decodes a V2 infer request, JSON or with binary tensors,
// within lim, recorded as at work in slot (atwork.go; nil: not).
func decodeV2(ctx *fasthttp.RequestCtx, lim v2.Limits, slot *shm.Slot) (*v2.InferRequest, error) {
	headerLen, err := binaryHeaderLen(ctx, int64(len(ctx.PostBody())))
	if err != nil {
		return nil, err
	}
	defer atWork(slot, ctx).End()
	return v2.DecodeInferRequestLimited(ctx.PostBody(), headerLen, lim)
}

// binaryHeaderLen is the Inference-Header-Content-Length header, checked
// against the body's size; -1 when absent.
func binaryHeaderLen(ctx *fasthttp.RequestCtx, size int64) (int, error) {
	raw := ctx.Request.Header.Peek(headerLenHeader)
	if raw == nil {
		return -1, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 0 || int64(n) > size {
		return 0, &v2.Error{Status: fasthttp.StatusBadRequest,
			Msg: fmt.Sprintf("bad %s header %q: want a length within the body", headerLenHeader, raw)}
	}
	return n, nil
}

// respond postprocesses the outputs (classification), stores them in the
// model's response cache, if it has one, under key and the identity of
// the model that computed them, and writes the V2 response.
func (h *handler) respond(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, outs []tensor.Tensor, key modelcache.Request, model string) {
	if err := m.postprocess(req, outs); err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, "postprocessing failed: "+err.Error())
		return
	}
	m.cache.Store(key, model, outs)
	h.renderGated(ctx, m, req, outs)
}

// render writes the V2 response of req's outputs: JSON, or with binary
// tensors as req asks.
func render(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest, outs []tensor.Tensor) {
	body, n := v2.AppendInferResponse(nil, m.md.Name, req, outs)
	if n >= 0 {
		ctx.Response.Header.Set(headerLenHeader, strconv.Itoa(n))
		ctx.SetContentType("application/octet-stream")
	} else {
		ctx.SetContentType("application/json")
	}
	ctx.Response.SetBodyRaw(body)
}

// forward runs the request on an infer worker and returns its outputs
// and the identity of the model file that computed them
// (worker.ModelIDHeader; "" when the worker did not say); on failure it
// returns the HTTP status to answer with.
func (h *handler) forward(ctx *fasthttp.RequestCtx, m *model, req *v2.InferRequest) (outs []tensor.Tensor, model string, status int, err error) {
	outputs := make([]string, len(req.Outputs))
	for i, o := range req.Outputs {
		outputs[i] = o.Name
	}
	up, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(up)
	defer fasthttp.ReleaseResponse(resp)
	up.Header.SetMethod(fasthttp.MethodPost)
	up.SetRequestURI("http://infer/infer")
	timeout := schedule.Set(up, &ctx.Request.Header, req, h.timeout)
	if timeout <= 0 { // the client has given up: no slot, no infer worker
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		return nil, "", fasthttp.StatusServiceUnavailable, errExpired
	}
	deadline := time.Now().Add(timeout)
	tr := &tensor.Request{Model: m.md.Name, Outputs: outputs, Inputs: req.Inputs}
	ho, err := h.setBody(up, tr, deadline)
	if err != nil {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		return nil, "", fasthttp.StatusServiceUnavailable, err
	}
	// After the reply is copied out, or at once on failure. The backstop
	// is the longest an infer worker can keep a request (its upstream
	// timeout plus the hang detection that would kill it).
	backstop := 2*h.timeout + time.Minute
	defer func() { ho.settle(backstop) }()
	route, gone := h.routes.route(m.md.Name), masterGone(ctx)
	pt := h.traceOf(ctx)
	span := pt.forward(up) // trace.go: the infer worker's parent
	err = h.up.DoRouteFor(up, resp, deadline, route, gone, nil)
	if err == nil && ho.a != nil && len(resp.Header.Peek(worker.ArenaRefusedHeader)) > 0 {
		ho.settle(backstop)
		ho = handoff{}
		err = h.resendInline(up, resp, tr, deadline, route, gone)
	}
	pt.endForward(span, err)
	if err != nil {
		h.log.WithLevel(failureLevel(err)).Err(err).Msg("infer worker request failed")
		status, err := sendFailure(ctx, m.md.Name, err, timeout)
		return nil, "", status, err
	}
	body, err := ho.reply(resp)
	if err != nil {
		return nil, "", fasthttp.StatusInternalServerError, fmt.Errorf("bad reply from infer worker: %w", err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		passOnFailure(ctx, resp)
		return nil, "", resp.StatusCode(), fmt.Errorf("inference failed: %s", body)
	}
	// The response (and the slot) are released on return: the tensors
	// alias the copy.
	outs, err = tensor.ParseTensors(body)
	if err != nil {
		return nil, "", fasthttp.StatusInternalServerError, fmt.Errorf("bad reply from infer worker: %w", err)
	}
	return outs, string(resp.Header.Peek(worker.ModelIDHeader)), fasthttp.StatusOK, nil
}

// passOnFailure copies the headers of an infer worker's failure that the
// client or the master reads: a full queue's or an expired request's 503
// says when to retry (Retry-After), and a run stopped at max_run_time is
// counted by the master, and against the body for the poison quarantine
// (worker.RunTimeoutHeader).
func passOnFailure(ctx *fasthttp.RequestCtx, resp *fasthttp.Response) {
	for _, h := range [...]string{fasthttp.HeaderRetryAfter, worker.RunTimeoutHeader} {
		if v := resp.Header.Peek(h); len(v) > 0 {
			ctx.Response.Header.SetBytesV(h, v)
		}
	}
}

// sendFailure is the answer to a request that got no reply from an infer
// worker: 504 past its timeout, 503 with Retry-After when no infer worker
// could take it, 502 when the one that had it failed: its connection broke
// with the request sent, which is the infer worker exiting (a crash inside
// ONNX Runtime, or a kill). That answer carries worker.InferExitedHeader,
// naming the infer worker's socket (lb.BackendError), for the master's
// poison quarantine.
func sendFailure(ctx *fasthttp.RequestCtx, model string, err error, timeout time.Duration) (int, error) {
	switch {
	case errors.Is(err, lb.ErrClientGone): // the master, for its client: nobody reads this
		return lb.StatusClientClosedRequest, err
	case errors.Is(err, fasthttp.ErrTimeout):
		return fasthttp.StatusGatewayTimeout, fmt.Errorf("inference did not finish within %s", timeout)
	case errors.Is(err, lb.ErrNoBackend):
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		return fasthttp.StatusServiceUnavailable, errors.New("no infer worker is available; retry later")
	}
	socket := "unknown"
	if be := (*lb.BackendError)(nil); errors.As(err, &be) {
		socket = be.Socket
	}
	ctx.Response.Header.Set(worker.InferExitedHeader, socket)
	return fasthttp.StatusBadGateway, fmt.Errorf("the inference worker serving model %q exited during this request; "+
		"it is restarted, and a request that makes it exit twice is refused for limits.poison_ttl", model)
}

// transportError answers errors fasthttp raises before the handler runs,
// such as a body over max_body_bytes.
func (h *handler) transportError(ctx *fasthttp.RequestCtx, err error) {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		writeError(ctx, fasthttp.StatusRequestEntityTooLarge, "request body is larger than max_body_bytes")
		return
	}
	writeError(ctx, fasthttp.StatusBadRequest, "malformed HTTP request: "+err.Error())
}

func writeV2Error(ctx *fasthttp.RequestCtx, err error) {
	var ve *v2.Error
	if errors.As(err, &ve) {
		writeError(ctx, ve.Status, ve.Msg)
		return
	}
	writeError(ctx, fasthttp.StatusBadRequest, err.Error())
}

// writeError answers msg as a V2 error. The body is the error's own
// bytes (SetBodyRaw), not a copy into a pooled buffer: fasthttp's
// response bodies share one pool with the infer workers' replies, and a
// 503 unread by its client would pin a reply's megabytes uncharged
// (TestRefusedAnswerPinsNoPooledBuffer).
func writeError(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.Response.SetBodyRaw(v2.AppendError(nil, msg))
}
