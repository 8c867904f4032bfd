package front

import (
	"math/rand/v2"
	"testing"

	"github.com/valyala/fasthttp"
)

// slowPath is requestPath without its fast path: fasthttp's own parse.
func slowPath(h *fasthttp.RequestHeader) string {
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	if err := u.Parse(h.Host(), h.RequestURI()); err != nil {
		return ""
	}
	return string(u.Path())
}

// TestRequestPathMatchesFasthttp: for hand-picked URIs and random ones
// built from the bytes that matter to normalizing, requestPath says what
// fasthttp's parse says, so the header-time decision and the handler
// never disagree about what was asked.
func TestRequestPathMatchesFasthttp(t *testing.T) {
	uris := []string{
		"/", "/v2/models/mlp", "/v2/models/mlp/infer", "/v2/models/mlp/infer?x=1",
		"/v2/models/mlp?a=//b&c=../d", "/v2//models", "//v2", "/v2/./models", "/v2/models/../health",
		"/v2/models/m%2Fx", "/v2/models/m#frag", "/v2/models/m?q#f", "/v2\\models", "/v2/models/m.onnx",
		"http://host/v2/models/m", "*", "v2/models", "/v2/models/m?", "/?", "/a/b/",
	}
	alphabet := []byte("/a.%2F?#\\=&:;+ A~\x80")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		b[0] = '/'
		uris = append(uris, string(b))
	}
	var h fasthttp.RequestHeader
	h.SetHost("127.0.0.1:8000")
	for _, uri := range uris {
		h.SetRequestURI(uri)
		if got, want := requestPath(&h), slowPath(&h); got != want {
			t.Errorf("requestPath(%q) = %q, fasthttp parses %q", uri, got, want)
		}
	}
}

// BenchmarkRequestPath is the path of a plain infer URI, with the fast
// path and with fasthttp's parse.
func BenchmarkRequestPath(b *testing.B) {
	var h fasthttp.RequestHeader
	h.SetHost("127.0.0.1:8000")
	h.SetRequestURI("/v2/models/mlp/infer")
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = requestPath(&h)
		}
	})
	b.Run("parsed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = slowPath(&h)
		}
	})
}
