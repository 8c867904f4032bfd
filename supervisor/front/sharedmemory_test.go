package front

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/sysshm"
)

// devShmObject creates a /dev/shm object holding data for this test and
// returns its key.
func devShmObject(t *testing.T, tag string, data []byte) (key, path string) {
	t.Helper()
	name := fmt.Sprintf("svtest-front-%d-%s", os.Getpid(), tag)
	path = filepath.Join("/dev/shm", name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return "/" + name, path
}

// TestRegionBytesAreChargedAsABody: the bytes a request's regions make
// the prep worker read are charged to the body budget as a body's
// would be, so a second 2 MiB request through a region beside one held
// by its worker is refused 503 under a 4 MiB budget (3.5 MiB for large
// bodies), before it reaches a worker; the worker got references to the
// input region's bytes and to the output's region (sysshm.RefsHeader),
// not bytes, and its answer (which names the region, as a prep worker's
// does once it wrote the output there) reaches the client as JSON. Once
// answered, the budget is whole again.
func TestRegionBytesAreChargedAsABody(t *testing.T) {
	f := startFront(t, func(c *config.Config) { c.Limits.MaxBodyBytesInFlight = 4 << 20 })
	const n = 2 << 20
	data := bytes.Repeat([]byte("region-bytes-"), n/13+1)[:n]
	inKey, _ := devShmObject(t, "in", data)
	outKey, _ := devShmObject(t, "out", make([]byte, 16))
	lim := shmLimits(f.fr.cfg())
	if err := f.fr.shm.Register("", "in", inKey, 0, n, lim); err != nil {
		t.Fatal(err)
	}
	if err := f.fr.shm.Register("", "out", outKey, 0, 16, lim); err != nil {
		t.Fatal(err)
	}
	got, refs, release := make(chan []byte, 2), make(chan string, 2), make(chan struct{})
	upstream(t, f, func(ctx *fasthttp.RequestCtx) {
		hl := ctx.Request.Header.Peek("Inference-Header-Content-Length")
		refs <- string(ctx.Request.Header.Peek(sysshm.RefsHeader))
		got <- append(append([]byte(nil), hl...), ctx.PostBody()...)
		select { // bounded: a request let through by mistake ends too
		case <-release:
		case <-time.After(10 * time.Second):
		}
		// As a prep worker answers once it wrote y into its region.
		hdr := `{"model_name":"mlp","outputs":[{"name":"y","datatype":"FP32","shape":[1,4],"parameters":{"shared_memory_region":"out","shared_memory_byte_size":16}}]}`
		ctx.Response.Header.Set("Inference-Header-Content-Length", strconv.Itoa(len(hdr)))
		ctx.SetBodyString(hdr)
	})
	req := fmt.Sprintf(`{"inputs":[{"name":"x","datatype":"UINT8","shape":[%d],"parameters":{"shared_memory_region":"in","shared_memory_byte_size":%d}}],`+
		`"outputs":[{"name":"y","parameters":{"shared_memory_region":"out","shared_memory_byte_size":16}}]}`, n, n)
	raw := fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(req), req)

	held := f.dial(t)
	if _, err := held.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	var first []byte
	select {
	case first = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the first request never reached the worker")
	}
	hl, _ := strconv.Atoi(string(first[:bytes.IndexByte(first, '{')]))
	sent := first[bytes.IndexByte(first, '{'):]
	if hl <= 0 || hl != len(sent) || !bytes.Contains(sent[:hl], []byte(`"binary_data_size":2097152`)) {
		t.Fatalf("the worker got a %d-byte body, header %d: %.200s; want the JSON alone", len(sent), hl, sent)
	}
	if r, err := sysshm.ParseRefs(<-refs); err != nil || len(r) != 2 || r[0].Pos != 0 || r[0].Size != n || r[0].Name != "in" ||
		r[1].Output != "y" || r[1].Name != "out" || r[1].Size != 16 || r[1].Echo != -1 {
		t.Fatalf("the worker got references %+v (%v); want region in's %d bytes and y into region out", r, err, n)
	}
	pollFor(t, "the region's bytes charged", func() bool { return f.fr.adm.Bodies().InUse() >= n })

	resp := f.exchange(t, f.dial(t), raw)
	if b := body(t, resp); resp.StatusCode != 503 || !strings.Contains(b, "max_body_bytes_in_flight") {
		t.Fatalf("a second region request beside the first: %d %s, want 503 naming the budget", resp.StatusCode, b)
	}
	close(release)
	_ = held.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(held), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Inference-Header-Content-Length") != "" ||
		!strings.Contains(b, `"shared_memory_region":"out"`) || !strings.Contains(b, `"shared_memory_byte_size":16`) || strings.Contains(b, "binary_data_size") {
		t.Fatalf("answer %d %v %s; want 200 JSON naming region out", resp.StatusCode, resp.Header, b)
	}
	f.waitBudgetEmpty(t)
}

// TestRegionRequestKeysAsItsInlineTwin: the poison quarantine keys a
// request whose input is in a region on the tensor bytes (the master
// reads them from its mapping for the key), so it is the key of the
// same tensor sent inline: a body quarantined one way is refused the
// other. Keyed on the body forwarded (the JSON alone), it would not be.
func TestRegionRequestKeysAsItsInlineTwin(t *testing.T) {
	f := startFront(t, nil)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4)
	key, _ := devShmObject(t, "twin", data)
	if err := f.fr.shm.Register("", "in", key, 0, 64, shmLimits(f.fr.cfg())); err != nil {
		t.Fatal(err)
	}
	var region fasthttp.RequestCtx
	region.Request.Header.SetMethod("POST")
	region.Request.SetRequestURI("/v2/models/mlp/infer")
	region.Request.SetBodyString(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"shared_memory_region":"in","shared_memory_byte_size":64}}]}`)
	v := &verdict{}
	p, ok := f.fr.inlineRegions(&region, f.fr.cfg(), v)
	if !ok || len(p.Refs()) != 1 {
		t.Fatalf("inlineRegions: %v %d: %s", ok, len(p.Refs()), region.Response.Body())
	}
	defer p.Release()
	defer v.bodyCharge.Release()
	if n, _ := strconv.Atoi(string(region.Request.Header.Peek("Inference-Header-Content-Length"))); n != len(region.Request.Body()) {
		t.Fatalf("the body forwarded carries %d bytes past its JSON; want none", len(region.Request.Body())-n)
	}

	var inline fasthttp.RequestCtx
	inline.Request.Header.SetMethod("POST")
	inline.Request.SetRequestURI("/v2/models/mlp/infer")
	header := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"parameters":{"binary_data_size":64}}]}`
	inline.Request.Header.Set("Inference-Header-Content-Length", strconv.Itoa(len(header)))
	inline.Request.SetBody(append([]byte(header), data...))

	if a, b := f.fr.guard.Key(&region), f.fr.guard.Key(&inline); a != b {
		t.Errorf("a region request keys %v, its inline twin %v; want one key", a, b)
	}
}
