package lb

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

func TestNoBackendsIs503(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	c := startFront(t, dir, p)
	wantJSONError(t, get(c, "/v2/models/m/infer"), fasthttp.StatusServiceUnavailable)
	p.SetBackends(nil)
	wantJSONError(t, get(c, "/"), fasthttp.StatusServiceUnavailable)
}

func TestRequestIDPropagatedOrGenerated(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	c := startFront(t, dir, p)

	// Error answers carry the id too.
	if r := get(c, "/", HeaderRequestID, "client-err-1"); r.requestID != "client-err-1" {
		t.Errorf("503 carries id %q; want the client's client-err-1", r.requestID)
	}
	if r := get(c, "/"); r.requestID == "" {
		t.Error("503 without client id carries no generated id")
	}

	p.SetBackends([]Backend{startBackend(t, dir, "b", nil).Backend})
	r := get(c, "/", HeaderRequestID, "client-id-42")
	wantOK(t, r)
	if r.seenID != "client-id-42" || r.requestID != "client-id-42" {
		t.Errorf("backend saw %q, response echoes %q; want client-id-42 for both", r.seenID, r.requestID)
	}

	seen := map[string]bool{}
	for range 5 {
		r := get(c, "/")
		wantOK(t, r)
		if r.requestID == "" || r.seenID != r.requestID {
			t.Fatalf("generated id: backend saw %q, response has %q; want the same non-empty id", r.seenID, r.requestID)
		}
		if seen[r.requestID] {
			t.Fatalf("generated id %q repeated", r.requestID)
		}
		seen[r.requestID] = true
	}
}

func TestPanicIs500AndServingGoesOn(t *testing.T) {
	dir := shortDir(t)
	p := New(Options{})
	p.panicHook = func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/panic" {
			panic("test panic")
		}
	}
	p.SetBackends([]Backend{startBackend(t, dir, "b", nil).Backend})
	c := startFront(t, dir, p)
	r := get(c, "/panic", HeaderRequestID, "boom-1")
	wantJSONError(t, r, fasthttp.StatusInternalServerError)
	if r.requestID != "boom-1" {
		t.Errorf("500 carries id %q; want boom-1", r.requestID)
	}
	wantOK(t, get(c, "/ok"))
}

// TestForwardsUnchanged checks method, URI (no path normalising), headers
// and body go up, and status, headers and body come back.
func TestForwardsUnchanged(t *testing.T) {
	dir := shortDir(t)
	type seen struct {
		Method, URI, Host, Custom, UA, Body string
	}
	b := startBackend(t, dir, "echo", func(ctx *fasthttp.RequestCtx) {
		out, _ := json.Marshal(seen{
			Method: string(ctx.Method()),
			URI:    string(ctx.Request.Header.RequestURI()),
			Host:   string(ctx.Request.Header.Host()),
			Custom: string(ctx.Request.Header.Peek("X-Custom")),
			UA:     string(ctx.Request.Header.UserAgent()),
			Body:   string(ctx.PostBody()),
		})
		ctx.SetStatusCode(fasthttp.StatusCreated)
		ctx.Response.Header.Set("X-Up", "yes")
		ctx.SetBody(out)
	})
	p := New(Options{})
	p.SetBackends([]Backend{b.Backend})
	c := startFront(t, dir, p)

	const uri = "/v2/models//m/../infer%2Fx?q=a%20b&q=2"
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(uri)
	req.Header.SetHost("Model.Example:8080")
	req.UseHostHeader = true
	req.Header.Set("X-Custom", "v1")
	req.SetBodyString(`{"inputs":[]}`)
	c.DisablePathNormalizing = true
	if err := c.DoTimeout(req, resp, waitLimit); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != fasthttp.StatusCreated || string(resp.Header.Peek("X-Up")) != "yes" {
		t.Errorf("got status %d X-Up %q; want 201 and yes", resp.StatusCode(), resp.Header.Peek("X-Up"))
	}
	var got seen
	if err := json.Unmarshal(resp.Body(), &got); err != nil {
		t.Fatalf("body %q: %v", resp.Body(), err)
	}
	want := seen{Method: "POST", URI: uri, Host: "Model.Example:8080", Custom: "v1", UA: "", Body: `{"inputs":[]}`}
	if got != want {
		t.Errorf("backend saw %+v; want %+v", got, want)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uo\te`, "ctl\x00\x1f\n\r\t", "héllo ✓", "bad\xffutf8", "</script>"} {
		b := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s: %v", s, b, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); back != want {
			t.Errorf("%q round-tripped to %q; want %q", s, back, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("x\"\\\x01\xff")
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s: %v", s, b, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q round-tripped to %q", s, back)
		}
	})
}
