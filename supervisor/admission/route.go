package admission

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Route refuses a request for a route that does not exist (404: a model
// or model version not served too) or a method the route does not take
// (405); proxied is whether the route is served by a prep worker. path is
// the request's normalised path.
func Route(c *config.Config, h *fasthttp.RequestHeader, path string) (r Refusal, route v2.Route, proxied bool) {
	want := fasthttp.MethodGet
	if cudaSharedMemory(path) {
		return Refusal{Status: fasthttp.StatusBadRequest, Msg: v2.CUDASharedMemoryUnsupported}, route, false
	}
	switch path {
	case "/v2/health/live", "/v2/health/ready", "/v2":
	default:
		var ok bool
		if route, ok = v2.ParseRoute(path); !ok {
			return Refusal{Status: fasthttp.StatusNotFound, Msg: "no route for " + strconv.Quote(path)}, route, false
		}
		if route.Model != "" && !c.ServesModel(route.Model) {
			return Refusal{Status: route.NotServedStatus(), Msg: fmt.Sprintf("unknown model %q", route.Model)}, route, false
		}
		if route.Version != "" && route.Model != "" { // a version the model may not serve
			if _, msg := route.PickServed(c.ServedNames(route.Model), nil); msg != "" {
				return Refusal{Status: route.NotServedStatus(), Msg: msg}, route, false
			}
		}
		want, proxied = route.Method(), true
	}
	method := string(h.Method())
	if method != want && (want != fasthttp.MethodGet || method != fasthttp.MethodHead) {
		return Refusal{Status: fasthttp.StatusMethodNotAllowed, Header: fasthttp.HeaderAllow, Value: want,
			Msg: fmt.Sprintf("method %s is not allowed on %q; use %s", method, path, want)}, route, proxied
	}
	return Refusal{}, route, proxied
}

// cudaSharedMemory reports whether path is under Triton's CUDA shared
// memory extension, which is refused 400 with a message saying so (not
// 404: the route is Triton's).
func cudaSharedMemory(path string) bool {
	return path == "/v2/cudasharedmemory" || strings.HasPrefix(path, "/v2/cudasharedmemory/")
}

// BodyAllowed refuses a body on a route that takes none (400) and a
// declared Content-Length over max_body_bytes (413). A chunked body
// (length -1) is held to max_body_bytes as it arrives.
func BodyAllowed(c *config.Config, route v2.Route, hasBody bool, length int64) Refusal {
	switch {
	case hasBody && !route.TakesBody():
		return Refusal{Status: fasthttp.StatusBadRequest, Msg: "this route takes no request body"}
	case length > int64(c.MaxBodyBytes):
		return Refusal{Status: fasthttp.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf("request body of %d bytes is larger than max_body_bytes (%d)", length, int64(c.MaxBodyBytes))}
	}
	return Refusal{}
}
