package front

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/admission"
)

// The logging route (Triton's logging extension: GET and POST
// /v2/logging) is answered by the master itself, through Logging, under
// the same header-time admission as every route: the API key first, then
// GET with no body, or POST with a body of at most MaxRepositoryBody
// bytes with a Content-Length, held under limits.max_in_flight and the
// body budget and read whole before Logging sees it. The settings and
// their mapping onto log_level are supervisor/logsettings'.

// LoggingPath is the logging route.
const LoggingPath = "/v2/logging"

// Logging answers the logging route.
type Logging interface {
	// LogSettings is GET's answer: the settings as JSON.
	LogSettings() []byte
	// SetLogSettings applies a POST's body and returns the settings as
	// JSON, or why the body was refused (a 400).
	SetLogSettings(body []byte) ([]byte, error)
}

// decideLogging admits a logging request from its header, once decide has
// checked its API key.
func (f *Front) decideLogging(h *fasthttp.RequestHeader, v *verdict) *verdict {
	if f.opts.Logging == nil {
		v.Refusal = admission.Refusal{Status: fasthttp.StatusNotFound, Msg: "no route for \"" + LoggingPath + "\""}
		return v
	}
	return f.decideSettings(h, v, LoggingPath)
}

// decideSettings admits a request to one of the master's settings routes
// at path (logging, trace): GET with no body, or POST with a body of at
// most MaxRepositoryBody bytes with a Content-Length, held under
// limits.max_in_flight and the body budget.
func (f *Front) decideSettings(h *fasthttp.RequestHeader, v *verdict, path string) *verdict {
	switch method := string(h.Method()); {
	case method == fasthttp.MethodGet || method == fasthttp.MethodHead:
		if v.hasBody {
			v.Refusal = admission.Refusal{Status: fasthttp.StatusBadRequest, Msg: "GET " + path + " takes no request body; POST the settings to change"}
		}
	case method != fasthttp.MethodPost:
		v.Refusal = admission.Refusal{Status: fasthttp.StatusMethodNotAllowed, Header: fasthttp.HeaderAllow, Value: "GET, POST",
			Msg: fmt.Sprintf("method %s is not allowed on %q; use GET or POST", method, path)}
	case v.length > MaxRepositoryBody:
		v.Refusal = admission.Refusal{Status: fasthttp.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf("request body of %d bytes is larger than %s takes (%d)", v.length, path, MaxRepositoryBody)}
	case v.length < 0:
		v.Refusal = admission.Refusal{Status: fasthttp.StatusLengthRequired,
			Msg: path + " takes a body with a Content-Length, not a chunked one"}
	default:
		v.Refusal = f.hold(f.cfg(), v)
	}
	return v
}

// serveLogging answers a logging request admitted by decideLogging.
func (f *Front) serveLogging(ctx *fasthttp.RequestCtx) {
	answer := f.opts.Logging.LogSettings()
	if ctx.IsPost() {
		body, ok := f.readMasterBody(ctx)
		if !ok {
			return
		}
		var err error
		if answer, err = f.opts.Logging.SetLogSettings(body); err != nil {
			f.reply(ctx, fasthttp.StatusBadRequest, err.Error())
			return
		}
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(answer)
}
