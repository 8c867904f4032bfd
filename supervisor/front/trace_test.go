package front

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tracing"
)

// TestTraceRoutes: with tracing off (no Tracing) the trace routes answer
// 404 saying so and GET /v2 does not list "trace"; with it on, GET /v2
// lists it, a POST is in force for the next GET, per-model routes of an
// unknown model are 404, and the settings routes' admission is the
// logging route's (405 for other methods, 411 for a chunked body).
func TestTraceRoutes(t *testing.T) {
	get := func(addr, method, path, body string) (int, string) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, "http://"+addr+path, r)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	off := startFront(t, nil)
	if code, body := get(off.addr, "GET", TracePath, ""); code != http.StatusNotFound || !strings.Contains(body, "tracing is off") {
		t.Errorf("tracing off: GET %s = %d %s, want 404 saying tracing is off", TracePath, code, body)
	}
	if _, body := get(off.addr, "GET", "/v2", ""); strings.Contains(body, `"trace"`) {
		t.Errorf("tracing off: GET /v2 lists trace: %s", body)
	}

	on := startFront(t, nil, func(o *Options) {
		o.Tracing = &Tracing{Sampler: tracing.NewSampler(tracing.Defaults())}
	})
	if _, body := get(on.addr, "GET", "/v2", ""); !strings.Contains(body, `"trace"`) {
		t.Errorf("tracing on: GET /v2 does not list trace: %s", body)
	}
	model := "/v2/models/mlp/trace/setting"
	for _, c := range []struct {
		method, path, body string
		status             int
		answer             string
	}{
		{"GET", TracePath, "", 200, `"trace_level":["OFF"]`},
		{"POST", model, `{"trace_rate":"7"}`, 200, `"trace_rate":"7"`},
		{"GET", model, "", 200, `"trace_rate":"7"`},
		{"GET", TracePath, "", 200, `"trace_rate":"1000"`},
		{"POST", TracePath, `{"trace_rate":"0"}`, 400, `{"error":"trace_rate \"0\"`},
		{"GET", "/v2/models/nosuch/trace/setting", "", 404, `unknown model`},
		{"PUT", TracePath, "", 405, "use GET or POST"},
	} {
		if code, body := get(on.addr, c.method, c.path, c.body); code != c.status || !strings.Contains(body, c.answer) {
			t.Errorf("%s %s %s: %d %s, want %d with %q", c.method, c.path, c.body, code, body, c.status, c.answer)
		}
	}
}
