package quarantine

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/httpcoding"
	"github.com/supervisor-dev/supervisor/internal/poison"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/admission"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// modJSON is a V2 request of one INT64 input x of shape [1,4].
const modJSON = `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"data":[1,2,3,4]}]}`

// keyedRequest is a request to model m's infer route with body and
// header fields (name, value pairs).
func keyedRequest(body []byte, kv ...string) *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.SetRequestURI("/v2/models/m/infer")
	ctx.Request.SetBody(body)
	for i := 0; i+1 < len(kv); i += 2 {
		ctx.Request.Header.Set(kv[i], kv[i+1])
	}
	return ctx
}

// gzipAt is body gzip'd at level.
func gzipAt(t testing.TB, body []byte, level int) []byte {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(body)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// binaryMod is a request of input x = xs, shape [1,len(xs)], sent as
// binary tensor data (modJSON's for 1,2,3,4): the body and its
// Inference-Header-Content-Length.
func binaryMod(xs ...int64) ([]byte, string) {
	header := fmt.Sprintf(`{"inputs":[{"name":"x","datatype":"INT64","shape":[1,%d],"parameters":{"binary_data_size":%d}}]}`, len(xs), 8*len(xs))
	body := []byte(header)
	for _, x := range xs {
		body = binary.LittleEndian.AppendUint64(body, uint64(x))
	}
	return body, strconv.Itoa(len(header))
}

// TestPoisonKeyIsWhatReachesTheModel: the same tensor gzip'd at two
// levels, deflated, with other JSON whitespace or number spelling, as
// binary tensor data, to the versioned route or asking for outputs has
// one key; another tensor, another model or a body that is no V2 request
// (keyed by its decompressed bytes) has its own.
func TestPoisonKeyIsWhatReachesTheModel(t *testing.T) {
	f, _, _ := poisonRig(2, crashedYes)
	plain := []byte(modJSON)
	bin, binLen := binaryMod(1, 2, 3, 4)
	want := f.Key(keyedRequest(plain))
	versioned := keyedRequest(plain)
	versioned.Request.SetRequestURI("/v2/models/m/versions/1/infer")
	same := map[string]*fasthttp.RequestCtx{
		"gzip level 1": keyedRequest(gzipAt(t, plain, gzip.BestSpeed), "Content-Encoding", "gzip"),
		"gzip level 9": keyedRequest(gzipAt(t, plain, gzip.BestCompression), "Content-Encoding", "gzip"),
		"deflate":      keyedRequest(httpcoding.Compress(httpcoding.Deflate, plain), "Content-Encoding", "deflate"),
		"whitespace":   keyedRequest([]byte(" {\"inputs\" : [ {\"name\":\"x\", \"datatype\":\"INT64\",\n\"shape\":[1, 4],\"data\":[1, 2, 3, 4]} ] }\n")),
		"binary":       keyedRequest(bin, headerLenHeader, binLen),
		"binary gzip":  keyedRequest(gzipAt(t, bin, gzip.DefaultCompression), headerLenHeader, binLen, "Content-Encoding", "gzip"),
		"versioned":    versioned,
		"an output":    keyedRequest([]byte(`{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"data":[1,2,3,4]}],"outputs":[{"name":"y"}]}`)),
		"classification": keyedRequest([]byte(`{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"data":[1,2,3,4]}],` +
			`"outputs":[{"name":"y","parameters":{"classification":3}}]}`)),
	}
	for name, ctx := range same {
		if got := f.Key(ctx); got != want {
			t.Errorf("%s: key %+v, want the plain JSON body's %+v", name, got, want)
		}
	}
	otherRoute := keyedRequest(plain)
	otherRoute.Request.SetRequestURI("/v2/models/n/infer")
	bin5, _ := binaryMod(1, 2, 3, 5)
	other := map[string]*fasthttp.RequestCtx{
		"another tensor":   keyedRequest(bin5, headerLenHeader, binLen),
		"another model":    otherRoute,
		"raw bytes":        keyedRequest([]byte("\x89PNG not a V2 request")),
		"undecodable gzip": keyedRequest([]byte("not gzip"), "Content-Encoding", "gzip"),
	}
	for name, ctx := range other {
		if got := f.Key(ctx); got == want {
			t.Errorf("%s: has the key of the plain JSON body", name)
		}
	}
	raw := []byte("\x89PNG not a V2 request")
	if a, b := f.Key(keyedRequest(raw)), f.Key(keyedRequest(gzipAt(t, raw, 1), "Content-Encoding", "gzip")); a != b {
		t.Errorf("a raw body and its gzip: keys %+v and %+v, want one", a, b)
	}
	fp32 := func(data string) poison.Key {
		return f.Key(keyedRequest([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[2],"data":[` + data + `]}]}`)))
	}
	if a, b := fp32("1.0, 2"), fp32("1,2e0"); a != b {
		t.Errorf("FP32 data spelled 1.0,2 and 1,2e0: keys %+v and %+v, want one", a, b)
	}
	if f.budget.InUse() != 0 {
		t.Errorf("the body budget holds %d bytes after keying, want 0", f.budget.InUse())
	}
}

// TestPoisonEncodingDoesNotDodge: a body quarantined after two crashes
// sent as JSON is refused gzip'd and as binary tensors.
func TestPoisonEncodingDoesNotDodge(t *testing.T) {
	f, p, c := poisonRig(2, crashedYes)
	for range 2 {
		send(f, c, "bad")
	}
	before := p.sent
	for name, ctx := range map[string]*fasthttp.RequestCtx{
		"gzip":    keyedRequest(gzipAt(t, []byte("bad"), 9), "Content-Encoding", "gzip"),
		"deflate": keyedRequest(httpcoding.Compress(httpcoding.Deflate, []byte("bad")), "Content-Encoding", "deflate"),
	} {
		f.forward(ctx, c, "m", time.Time{}, nil, nil)
		if code := ctx.Response.StatusCode(); code != fasthttp.StatusUnprocessableEntity {
			t.Errorf("the quarantined body %s: %d, want 422", name, code)
		}
	}
	if p.sent != before {
		t.Errorf("%d refused sends reached the proxy", p.sent-before)
	}
}

// crashingProxy plays the lb over a model that crashes its infer
// worker on every request: 502 marked as the infer worker's exit.
type crashingProxy struct{ crashProxy }

func (p *crashingProxy) ServeHTTPFor(ctx *fasthttp.RequestCtx, _ time.Time, _ lb.Client, _ lb.AnswerGate) error {
	p.sent++
	ctx.SetStatusCode(fasthttp.StatusBadGateway)
	ctx.Response.Header.Set(worker.InferExitedHeader, "m")
	return nil
}

// TestPoisonRouteAndOutputsDoNotDodge: a body quarantined after two
// crashes is refused when resent to the versioned route, asking for an
// output, or asking for classification 1 to 1000, and none of those
// sends reaches a worker (each would crash it again, failing every
// request it holds); a raw body (undecoded) is refused at the versioned
// route as well.
func TestPoisonRouteAndOutputsDoNotDodge(t *testing.T) {
	f, _, c := poisonRig(2, crashedYes)
	p := &crashingProxy{}
	f.proxy = p
	to := func(path, body string) *fasthttp.RequestCtx {
		ctx := keyedRequest([]byte(body))
		ctx.Request.SetRequestURI(path)
		return ctx
	}
	for range 2 {
		f.forward(to("/v2/models/m/infer", modJSON), c, "m", time.Time{}, nil, nil)
		f.forward(to("/v2/models/m/infer", "\x89PNG raw"), c, "m", time.Time{}, nil, nil)
	}
	withOutputs := func(outputs string) string {
		return `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,4],"data":[1,2,3,4]}],"outputs":[` + outputs + `]}`
	}
	dodges := map[string]*fasthttp.RequestCtx{
		"versioned":     to("/v2/models/m/versions/1/infer", modJSON),
		"an output":     to("/v2/models/m/infer", withOutputs(`{"name":"y"}`)),
		"versioned raw": to("/v2/models/m/versions/1/infer", "\x89PNG raw"),
	}
	for k := 1; k <= 1000; k++ {
		dodges["classification "+strconv.Itoa(k)] = to("/v2/models/m/infer", withOutputs(`{"name":"y","parameters":{"classification":`+strconv.Itoa(k)+`}}`))
	}
	before, refused := p.sent, 0
	for name, ctx := range dodges {
		f.forward(ctx, c, "m", time.Time{}, nil, nil)
		if code := ctx.Response.StatusCode(); code == fasthttp.StatusUnprocessableEntity {
			refused++
		} else if !strings.HasPrefix(name, "classification") {
			t.Errorf("the quarantined body, %s: %d, want 422", name, code)
		}
	}
	if refused != len(dodges) || p.sent != before {
		t.Fatalf("%d of %d resends refused, %d reached a worker and crashed it; want all refused, none sent", refused, len(dodges), p.sent-before)
	}
}

// brokenProxy plays the lb over a prep worker that dies under every
// request: 502 and err.
type brokenProxy struct {
	crashProxy
	err error
}

func (p *brokenProxy) ServeHTTPFor(ctx *fasthttp.RequestCtx, _ time.Time, _ lb.Client, _ lb.AnswerGate) error {
	p.sent++
	ctx.SetStatusCode(fasthttp.StatusBadGateway)
	return p.err
}

// TestPrepCrashIsAStrike: a request whose prep worker's connection broke
// is counted when the master says a prep worker crashed since it was
// sent, and not when it says none did, nor when no backend took it or
// the exchange timed out (a 504 must not wait for a crash).
func TestPrepCrashIsAStrike(t *testing.T) {
	broke := &lb.BackendError{Socket: "prep.sock", Name: "prep-0", Err: errors.New("the server closed connection before returning the first response byte")}
	notSent := fmt.Errorf("%w: dial failed", lb.ErrNoBackend)
	for _, tc := range []struct {
		name    string
		err     error
		crashed func(string, time.Duration) (Exit, bool)
		want422 bool
	}{
		{"crashed", broke, crashedYes, true},
		{"killed from outside", broke, killed, false},
		{"no backend took it", notSent, crashedYes, false},
		{"timed out", fmt.Errorf("backend prep-0: %w", fasthttp.ErrTimeout), crashedYes, false},
	} {
		f, _, c := poisonRig(2, crashedYes)
		p := &brokenProxy{err: tc.err}
		f.proxy, f.o.PrepExited = p, tc.crashed
		for range 2 {
			send(f, c, "decoder-killer")
		}
		code, _, _ := send(f, c, "decoder-killer")
		if got := code == fasthttp.StatusUnprocessableEntity; got != tc.want422 {
			t.Errorf("%s: third send %d, want 422: %v", tc.name, code, tc.want422)
		}
	}
}

// int64JSON is a V2 JSON request of one INT64 input x = 0..n-1, shape
// [1,n]: some 40 KB for n = 8192.
func int64JSON(n int) []byte {
	var js bytes.Buffer
	fmt.Fprintf(&js, `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,%d],"data":[`, n)
	for i := range n {
		if i > 0 {
			js.WriteByte(',')
		}
		fmt.Fprintf(&js, "%d", i)
	}
	js.WriteString(`]}]}`)
	return js.Bytes()
}

// BenchmarkPoisonKey is what a request of a model with a quarantine entry
// pays for its key: hashing the body as sent (the old key), and the key
// of what reaches the model, for an 8192-element INT64 tensor as JSON
// (about 40 KB), gzip'd JSON, and binary (64 KiB).
func BenchmarkPoisonKey(b *testing.B) {
	f, _, _ := poisonRig(2, crashedYes)
	js := bytes.NewBuffer(int64JSON(8192))
	xs := make([]int64, 8192)
	for i := range xs {
		xs[i] = int64(i)
	}
	bin, binLen := binaryMod(xs...)
	for _, c := range []struct {
		name string
		ctx  *fasthttp.RequestCtx
	}{
		{"json", keyedRequest(js.Bytes())},
		{"json-gzip", keyedRequest(gzipAt(b, js.Bytes(), 6), "Content-Encoding", "gzip")},
		{"binary", keyedRequest(bin, headerLenHeader, binLen)},
	} {
		b.Run(c.name+"/as-sent", func(b *testing.B) {
			b.SetBytes(int64(len(c.ctx.Request.Body())))
			for b.Loop() {
				f.sentKey(c.ctx)
			}
		})
		b.Run(c.name+"/decoded", func(b *testing.B) {
			b.SetBytes(int64(len(c.ctx.Request.Body())))
			for b.Loop() {
				f.Key(c.ctx)
			}
		})
	}
}

// TestPoisonKeyDecodeIsCharged: a JSON tensor decodes to up to four times
// its bytes (an INT64 "0," to 8 bytes), on the master. A body whose
// decode does not fit in the body budget is keyed by its bytes, and
// nothing stays charged; with room, or sent as binary tensors (which
// alias the body), it is keyed by its tensors.
func TestPoisonKeyDecodeIsCharged(t *testing.T) {
	const n = 8 << 10
	f, _, c := poisonRig(2, crashedYes)
	js := []byte(fmt.Sprintf(`{"inputs":[{"name":"x","datatype":"INT64","shape":[1,%d],"data":[0%s]}]}`, n, strings.Repeat(",0", n-1)))
	bin, binLen := binaryMod(make([]int64, n)...)
	c.Limits.MaxBodyBytesInFlight = config.ByteSize(3 * len(js)) // the body fits, its decode (8 bytes a value) does not
	tight := f.Key(keyedRequest(js))
	if want := f.q.KeyOf("m", "", js); tight != want {
		t.Errorf("a %d-byte JSON body with %d bytes of budget: key %+v, want its bytes' %+v", len(js), 3*len(js), tight, want)
	}
	binTight := f.Key(keyedRequest(bin, headerLenHeader, binLen))
	c.Limits.MaxBodyBytesInFlight = config.ByteSize(8 * len(js))
	if roomy := f.Key(keyedRequest(js)); roomy != binTight || roomy == tight {
		t.Errorf("with room: JSON key %+v, binary key (tight budget) %+v, want one, not the bytes' %+v", roomy, binTight, tight)
	}
	if f.budget.InUse() != 0 {
		t.Errorf("the body budget holds %d bytes after keying, want 0", f.budget.InUse())
	}
}

// TestPoisonKeyLeavesNoLargeCharge: keying a compressed body that
// inflates past 1 MiB leaves the budget's large count at 0, as it found
// it: in pooled chunks (each taken as a small charge, given back in one
// sum), into one buffer its gzip trailer sizes, or both (a trailer that
// declares less than the body holds). It went down by the chunks each
// time (the sum classed as large), so a stream of such bodies let the
// large lane's heir take the small bodies' eighth (admission.Bodies).
func TestPoisonKeyLeavesNoLargeCharge(t *testing.T) {
	spaced, dense := spacedJSON(3<<20), int64JSON(1<<20)
	for name, c := range map[string]struct {
		coding string
		body   []byte
	}{
		"deflate, in chunks":          {"deflate", httpcoding.Compress(httpcoding.Deflate, spaced)},
		"gzip past its ratio, chunks": {"gzip", gzipAt(t, spaced, gzip.BestSpeed)},
		"gzip, its size declared":     {"gzip", gzipAt(t, dense, gzip.BestSpeed)},
		"gzip, more than declared":    {"gzip", append(gzipAt(t, dense, gzip.BestSpeed), gzipAt(t, dense, gzip.BestSpeed)...)},
	} {
		f, _, _ := poisonRig(2, crashedYes)
		_ = f.Key(keyedRequest(c.body, "Content-Encoding", c.coding))
		if used, large := f.budget.InUse(), f.budget.Large(); used != 0 || large != 0 {
			t.Errorf("%s: after keying, the body budget holds %d bytes, %d of them large; want 0 and 0", name, used, large)
		}
	}
}

// TestPoisonKeyInflateGivesBackTheLargeCount: a body inflated in chunks
// (deflate: no size to allocate at once) past 1 MiB takes its chunks as
// small reserves; giving them back must not take them off the count of
// large bytes, whose drift below zero would let the budget's heir
// (admission.Bodies' large lane) take the eighth kept for small bodies.
func TestPoisonKeyInflateGivesBackTheLargeCount(t *testing.T) {
	f, _, c := poisonRig(2, crashedYes)
	c.MaxBodyBytes = 8 << 20
	c.Limits.MaxBodyBytesInFlight = 64 << 20
	body := httpcoding.Compress(httpcoding.Deflate, make([]byte, 3<<20))
	f.Key(keyedRequest(body, "Content-Encoding", "deflate"))
	if f.budget.InUse() != 0 || f.budget.Large() != 0 {
		t.Errorf("after keying a deflated 3 MiB body: %d bytes in use, %d large, want 0 and 0", f.budget.InUse(), f.budget.Large())
	}
}

// TestPoisonKeyIsPerVersion: with the master's ServedName, the same body
// to version 1 and version 2 of a model has two keys (a body that crashes
// v2 is still sent to v1), and a route naming no version keys as the
// version it resolves to. Without it (the guard before versions) both
// versions shared one key.
func TestPoisonKeyIsPerVersion(t *testing.T) {
	cfg := config.DefaultConfig()
	bodies := admission.NewBodies(cfg.BodyBudgetLimit())
	served := func(rt v2.Route) string {
		if rt.Version == "" {
			return "m@2" // the highest ready version
		}
		return v2.ServedName(rt.Model, rt.Version)
	}
	g := New(Options{Config: func() *config.Config { return cfg }, Budget: func() *admission.Bodies { return bodies }, Log: zerolog.Nop(), ServedName: served})
	to := func(path string) *fasthttp.RequestCtx {
		ctx := keyedRequest([]byte(modJSON))
		ctx.Request.SetRequestURI(path)
		return ctx
	}
	v1, v2key, none := g.Key(to("/v2/models/m/versions/1/infer")), g.Key(to("/v2/models/m/versions/2/infer")), g.Key(to("/v2/models/m/infer"))
	if v1 == v2key {
		t.Error("versions 1 and 2 share a poison key")
	}
	if none != v2key {
		t.Error("the unversioned route does not key as the version it goes to")
	}
	if raw1, raw2 := g.sentKey(to("/v2/models/m/versions/1/infer")), g.sentKey(to("/v2/models/m/versions/2/infer")); raw1 == raw2 {
		t.Error("versions 1 and 2 share a key of the body as sent")
	}
}
