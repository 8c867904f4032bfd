package front

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// echoLogging answers GET with "get" and POST with its body, refusing
// "bad".
type echoLogging struct{}

func (echoLogging) LogSettings() []byte { return []byte(`"get"`) }
func (echoLogging) SetLogSettings(b []byte) ([]byte, error) {
	if string(b) == "bad" {
		return nil, errors.New("bad settings")
	}
	return b, nil
}

// TestLoggingRouteAdmission: /v2/logging is decided from its header like
// the repository routes: GET without a body, POST with a bounded
// Content-Length body, other methods 405 with Allow, and 404 without a
// Logging; a refused POST body is a 400 with Logging's reason.
func TestLoggingRouteAdmission(t *testing.T) {
	h := startFront(t, nil, func(o *Options) { o.Logging = echoLogging{} })
	do := func(method, body string, chunked bool) (int, string, string) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
			if chunked {
				r = io.MultiReader(r) // no length known: sent chunked
			}
		}
		req, err := http.NewRequest(method, "http://"+h.addr+LoggingPath, r)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Allow")
	}
	for _, c := range []struct {
		method, body string
		chunked      bool
		status       int
		answer       string
	}{
		{"GET", "", false, 200, `"get"`},
		{"POST", `{"log_info":true}`, false, 200, `{"log_info":true}`},
		{"POST", "bad", false, 400, "bad settings"},
		{"GET", "{}", false, 400, "takes no request body"},
		{"POST", "{}", true, 411, "Content-Length"},
		{"POST", strings.Repeat(" ", MaxRepositoryBody+1), false, 413, "larger than"},
		{"DELETE", "", false, 405, "use GET or POST"},
	} {
		status, answer, allow := do(c.method, c.body, c.chunked)
		if status != c.status || !strings.Contains(answer, c.answer) {
			t.Errorf("%s %d-byte body (chunked %v): %d %s, want %d with %q", c.method, len(c.body), c.chunked, status, answer, c.status, c.answer)
		}
		if c.status == 405 && allow != "GET, POST" {
			t.Errorf("405 Allow = %q, want GET, POST", allow)
		}
	}

	without := startFront(t, nil)
	resp, err := http.Get("http://" + without.addr + LoggingPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("without a Logging: %d, want 404", resp.StatusCode)
	}
}
