package v2

import (
	"strings"
	"testing"
)

func TestParseRoute(t *testing.T) {
	for path, want := range map[string]struct {
		r  Route
		ok bool
	}{
		"/v2/models/mlp":                   {Route{"mlp", "", ""}, true},
		"/v2/models/mlp/infer":             {Route{"mlp", "infer", ""}, true},
		"/v2/models/mlp/versions/1/infer":  {Route{"mlp", "infer", "1"}, true},
		"/v2/models/mlp/versions/1":        {Route{"mlp", "", "1"}, true},
		"/v2/models/mlp/ready":             {Route{"mlp", "ready", ""}, true},
		"/v2/models/mlp/stats":             {Route{"mlp", "stats", ""}, true},
		"/v2/models/stats":                 {Route{"", "stats", ""}, true},
		"/v2/models/mlp/config":            {Route{"mlp", "config", ""}, true},
		"/v2/models/mlp/versions/1/config": {Route{"mlp", "config", "1"}, true},
		"/v2/models/mlp/versions/7/ready":  {Route{"mlp", "ready", "7"}, true},
		"/v2/models/mlp/config/x":          {Route{}, false},
		"/v2/models/":                      {Route{}, false},
		"/v2/models//infer":                {Route{}, false},
		"/v2/models/mlp/train":             {Route{}, false},
		"/v2/models/mlp/versions//infer":   {Route{}, false},
		"/v2/health/ready":                 {Route{}, false},
		"/_supervisor/upstreams":           {Route{}, false},
		"/v2/models/mlp/infer/extra/stuff": {Route{}, false},
	} {
		r, ok := ParseRoute(path)
		if ok != want.ok || (ok && r != want.r) {
			t.Errorf("ParseRoute(%q) = %+v, %v; want %+v, %v", path, r, ok, want.r, want.ok)
		}
	}
	if (Route{Action: "infer"}).Method() != "POST" || (Route{Action: "ready"}).Method() != "GET" {
		t.Error("infer takes POST, the rest GET")
	}
}

// TestPickServed: a route naming a version gets it, or a 404 message
// naming the model, the version asked and those served; a route naming
// none gets the highest ready version (numerically: 10 after 9), the
// highest of all when none is ready; a model of one file is version 1.
func TestPickServed(t *testing.T) {
	served := []string{"mlp@2", "mlp@10", "mlp@9"}
	allReady := func(string) bool { return true }
	for _, c := range []struct {
		path  string
		ready func(string) bool
		want  string
	}{
		{"/v2/models/mlp", allReady, "mlp@10"},
		{"/v2/models/mlp/infer", func(s string) bool { return s != "mlp@10" }, "mlp@9"},
		{"/v2/models/mlp/ready", func(string) bool { return false }, "mlp@10"},
		{"/v2/models/mlp/versions/2/infer", func(string) bool { return false }, "mlp@2"},
		{"/v2/models/mlp/versions/9", allReady, "mlp@9"},
		{"/v2/models/mlp/versions/02/infer", allReady, "mlp@2"}, // a number, as Triton parses it
	} {
		r, _ := ParseRoute(c.path)
		if got, msg := r.PickServed(served, c.ready); got != c.want || msg != "" {
			t.Errorf("%s: PickServed = %q, %q; want %q", c.path, got, msg, c.want)
		}
	}
	for _, path := range []string{"/v2/models/mlp/versions/1", "/v2/models/mlp/versions/x/stats", "/v2/models/mlp/versions/2x/infer"} {
		r, _ := ParseRoute(path)
		got, msg := r.PickServed(served, allReady)
		if got != "" || !strings.Contains(msg, `"mlp"`) || !strings.Contains(msg, `"`+r.Version+`"`) || !strings.Contains(msg, "2, 10, 9") {
			t.Errorf("%s: PickServed = %q, %q; want refused naming the model, the version asked and those served", path, got, msg)
		}
	}
	for path, want := range map[string]string{"/v2/models/one": "one", "/v2/models/one/versions/1/infer": "one", "/v2/models/one/versions/2": ""} {
		r, _ := ParseRoute(path)
		if got, _ := r.PickServed([]string{"one"}, allReady); got != want {
			t.Errorf("%s: PickServed = %q, want %q (one file is version 1)", path, got, want)
		}
	}
}

// TestNotServedStatus: a model or version not served is 404 on every
// route but readiness, which is 400 as Triton answers it (not ready).
func TestNotServedStatus(t *testing.T) {
	for path, want := range map[string]int{
		"/v2/models/m/ready":            400,
		"/v2/models/m/versions/2/ready": 400,
		"/v2/models/m":                  404,
		"/v2/models/m/versions/2":       404,
		"/v2/models/m/infer":            404,
		"/v2/models/m/config":           404,
		"/v2/models/m/stats":            404,
	} {
		r, ok := ParseRoute(path)
		if !ok || r.NotServedStatus() != want {
			t.Errorf("%s: NotServedStatus = %d (route ok %v), want %d", path, r.NotServedStatus(), ok, want)
		}
	}
}
