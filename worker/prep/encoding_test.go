package prep

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"io"
	"math/rand"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/tritonconfig"
)

// callEncoded runs one request with the given headers through h.
func callEncoded(h *handler, method, path string, body []byte, hdr map[string]string) *fasthttp.Response {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	for k, v := range hdr {
		ctx.Request.Header.Set(k, v)
	}
	ctx.Request.SetBody(body)
	h.serve(&ctx)
	var resp fasthttp.Response
	ctx.Response.CopyTo(&resp)
	return &resp
}

func rawDeflate(b []byte) []byte {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.DefaultCompression)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// TestCompressedRequestBodies: gzip, deflate (zlib, as tritonclient sends
// it) and raw deflate bodies are served as their plain bytes would be;
// an unknown or stacked coding gets 415, a corrupt body 400, a bomb 413,
// and every decompressed byte goes back to the budget.
func TestCompressedRequestBodies(t *testing.T) {
	w := startModelInfer(t, []string{"m"}, nil)
	h := routedHandler(t, w.socket)
	plain := []byte(inferBody)
	zeros := make([]byte, 8<<20)
	h.bodies = newBodyDecoder(1 << 20)
	for name, tc := range map[string]struct {
		coding string
		body   []byte
		want   int
	}{
		"gzip":            {"gzip", httpcoding.Compress(httpcoding.Gzip, plain), fasthttp.StatusOK},
		"deflate (zlib)":  {"deflate", httpcoding.Compress(httpcoding.Deflate, plain), fasthttp.StatusOK},
		"deflate (raw)":   {"deflate", rawDeflate(plain), fasthttp.StatusOK},
		"identity":        {"identity", plain, fasthttp.StatusOK},
		"br":              {"br", plain, fasthttp.StatusUnsupportedMediaType},
		"stacked":         {"gzip, gzip", plain, fasthttp.StatusUnsupportedMediaType},
		"corrupt gzip":    {"gzip", plain, fasthttp.StatusBadRequest},
		"gzip bomb":       {"gzip", httpcoding.Compress(httpcoding.Gzip, zeros), fasthttp.StatusRequestEntityTooLarge},
		"deflate bomb":    {"deflate", httpcoding.Compress(httpcoding.Deflate, zeros), fasthttp.StatusRequestEntityTooLarge},
		"gzip of garbage": {"gzip", httpcoding.Compress(httpcoding.Gzip, []byte("not json")), fasthttp.StatusBadRequest},
	} {
		resp := callEncoded(h, "POST", "/v2/models/m/infer", tc.body, map[string]string{"Content-Encoding": tc.coding})
		if resp.StatusCode() != tc.want {
			t.Errorf("%s: %d %s; want %d", name, resp.StatusCode(), resp.Body(), tc.want)
		}
		if tc.want != fasthttp.StatusOK && !json.Valid(resp.Body()) {
			t.Errorf("%s: error body %q is not V2 error JSON", name, resp.Body())
		}
		if used := h.bodies.held(); used != 0 {
			t.Errorf("%s: %d decompressed bytes still held after the answer", name, used)
		}
	}
}

// TestDecompressBudget: past the worker's budget of decompressed bytes a
// compressed request gets 503 with Retry-After, and holds nothing.
func TestDecompressBudget(t *testing.T) {
	w := startModelInfer(t, []string{"m"}, nil)
	h := routedHandler(t, w.socket)
	h.bodies = bodyDecoderWithin(1<<20, 16)
	resp := callEncoded(h, "POST", "/v2/models/m/infer", httpcoding.Compress(httpcoding.Gzip, []byte(inferBody)),
		map[string]string{"Content-Encoding": "gzip"})
	if resp.StatusCode() != fasthttp.StatusServiceUnavailable || len(resp.Header.Peek("Retry-After")) == 0 {
		t.Errorf("over the budget: %d (Retry-After %q) %s; want 503 with Retry-After", resp.StatusCode(), resp.Header.Peek("Retry-After"), resp.Body())
	}
	if used := h.bodies.held(); used != 0 {
		t.Errorf("%d bytes held after a refusal", used)
	}
}

// TestCompressedResponses: the response is compressed as Accept-Encoding
// asks, decompresses to exactly the identity response, and says Vary.
func TestCompressedResponses(t *testing.T) {
	w := startModelInfer(t, []string{"m"}, nil)
	h := routedHandler(t, w.socket)
	plain := callEncoded(h, "POST", "/v2/models/m/infer", []byte(inferBody), nil)
	if plain.StatusCode() != fasthttp.StatusOK || len(plain.Header.Peek("Content-Encoding")) != 0 {
		t.Fatalf("identity: %d, Content-Encoding %q", plain.StatusCode(), plain.Header.Peek("Content-Encoding"))
	}
	for accept, want := range map[string]string{"gzip": "gzip", "deflate": "deflate", "gzip;q=0.1, deflate": "deflate", "br": ""} {
		resp := callEncoded(h, "POST", "/v2/models/m/infer", []byte(inferBody), map[string]string{"Accept-Encoding": accept})
		if got := string(resp.Header.Peek("Content-Encoding")); got != want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q; want %q", accept, got, want)
		}
		if string(resp.Header.Peek("Vary")) != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q; want Accept-Encoding", accept, resp.Header.Peek("Vary"))
		}
		if body := decodeResponse(t, want, resp.Body()); !bytes.Equal(body, plain.Body()) {
			t.Errorf("Accept-Encoding %q: decompressed %q; want the identity response %q", accept, body, plain.Body())
		}
	}
	bad := callEncoded(h, "POST", "/v2/models/m/infer", []byte("{"), map[string]string{"Accept-Encoding": "gzip"})
	if bad.StatusCode() != fasthttp.StatusBadRequest || len(bad.Header.Peek("Content-Encoding")) != 0 {
		t.Errorf("an error answer: %d, Content-Encoding %q; want 400 uncompressed, as Triton", bad.StatusCode(), bad.Header.Peek("Content-Encoding"))
	}
}

func decodeResponse(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var r io.Reader = bytes.NewReader(b)
	var err error
	switch coding {
	case "gzip":
		r, err = gzip.NewReader(r)
	case "deflate":
		r, err = zlib.NewReader(r)
	}
	if err != nil {
		t.Fatalf("%s response: %v", coding, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s response: %v", coding, err)
	}
	return out
}

// TestConfigRoute: the model configuration route answers the model as the
// infer worker reports it; unknown models and versions 404 (400 on the
// ready route, as Triton), other methods 405.
func TestConfigRoute(t *testing.T) {
	w := startModelInfer(t, []string{"m", "down"}, map[string]string{"down": "bad file"})
	h := routedHandler(t, w.socket)
	code, body := call(h, "GET", "/v2/models/m/versions/1/config", "")
	var cfg tritonconfig.ModelConfig
	if err := json.Unmarshal([]byte(body), &cfg); code != fasthttp.StatusOK || err != nil || cfg.Name != "m" ||
		len(cfg.Input) != 1 || cfg.Input[0].DataType != "TYPE_FP32" || len(cfg.InstanceGroup) != 1 {
		t.Errorf("config: %d %s (%v); want m's configuration", code, body, err)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/v2/models/nope/config", fasthttp.StatusNotFound},
		{"GET", "/v2/models/m/versions/2/config", fasthttp.StatusNotFound},
		{"POST", "/v2/models/m/config", fasthttp.StatusMethodNotAllowed},
		{"GET", "/v2/models/down/config", fasthttp.StatusServiceUnavailable},
		// Readiness of what is not served is Triton's 400 (not ready).
		{"GET", "/v2/models/nope/ready", fasthttp.StatusBadRequest},
		{"GET", "/v2/models/m/versions/2/ready", fasthttp.StatusBadRequest},
		{"GET", "/v2/models/down/ready", fasthttp.StatusServiceUnavailable},
	} {
		if code, body := call(h, tc.method, tc.path, ""); code != tc.want || !json.Valid([]byte(body)) {
			t.Errorf("%s %s: %d %s; want %d with V2 error JSON", tc.method, tc.path, code, body, tc.want)
		}
	}
}

// TestLargeCompressedBodyTakesTheGatesLargeLane: a compressed body of
// largeInflateBytes or more inflates only once the decode gate's large
// lane lets it (so bombs take turns with large images), while a small
// compressed request inflates at once beside it.
func TestLargeCompressedBodyTakesTheGatesLargeLane(t *testing.T) {
	w := startModelInfer(t, []string{"m"}, nil)
	h := routedHandler(t, w.socket)
	h.bodies = newBodyDecoder(1 << 20)
	g := decodegate.New(256 << 20)
	h.bodies.gate = g
	full := mustEnter(t, g, g.Largest()) // the lane is full
	noise := make([]byte, 2*largeInflateBytes)
	rand.New(rand.NewSource(1)).Read(noise)
	big := httpcoding.Compress(httpcoding.Gzip, noise) // incompressible: stays over largeInflateBytes
	done := make(chan int, 1)
	go func() {
		done <- callEncoded(h, "POST", "/v2/models/m/infer", big, map[string]string{"Content-Encoding": "gzip"}).StatusCode()
	}()
	waitState(t, g, decodegate.State{LargeIn: 1, LargeBytes: g.Largest(), LargeWaiting: 1})

	small := httpcoding.Compress(httpcoding.Gzip, []byte(inferBody))
	if resp := callEncoded(h, "POST", "/v2/models/m/infer", small, map[string]string{"Content-Encoding": "gzip"}); resp.StatusCode() != fasthttp.StatusOK {
		t.Fatalf("small compressed request beside a waiting large one: %d %s", resp.StatusCode(), resp.Body())
	}
	select {
	case code := <-done:
		t.Fatalf("the large body was answered (%d) while the gate's large lane was full", code)
	default:
	}
	full.Release()
	select {
	case code := <-done:
		if code != fasthttp.StatusBadRequest { // random bytes are not a request
			t.Fatalf("large body once the lane freed: %d, want 400", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the large body still waits after the lane freed")
	}
	waitState(t, g, decodegate.State{})
}

// TestInflateBurstReleasesMemory: once the decompressed bytes held fall
// back after a burst of decodegate.BurstBytes or more (a gzip bomb's chunks), the
// worker hands its freed memory back to the OS (internal/osmem).
func TestInflateBurstReleasesMemory(t *testing.T) {
	d := newBodyDecoder(decodegate.BurstBytes)
	c := d.charge()
	if err := c.Grow(decodegate.BurstBytes); err != nil {
		t.Fatalf("a body of max_body_bytes did not fit the decompressed-bytes budget: %v", err)
	}
	c.Release()
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the release after the inflate burst", func() bool {
		return d.burst.Freer.Released() == 1
	})
}
