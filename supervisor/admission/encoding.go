package admission

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// EncodingAllowed refuses, from the header, a request body in a
// Content-Encoding the prep workers cannot decode (415): anything but
// identity, gzip and deflate, or a list of codings. The master forwards
// the body as it came; the prep worker decompresses it (worker/prep
// encoding.go), where max_body_bytes bounds the decompressed size.
func EncodingAllowed(route v2.Route, h *fasthttp.RequestHeader) Refusal {
	if !route.TakesBody() {
		return Refusal{}
	}
	_, err := httpcoding.ParseContentEncoding(h.Peek(fasthttp.HeaderContentEncoding))
	if errors.Is(err, httpcoding.ErrUnsupported) {
		return Refusal{Status: fasthttp.StatusUnsupportedMediaType, Msg: err.Error()}
	}
	return Refusal{}
}
