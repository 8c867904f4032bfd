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

// TestVersionError: a route naming no version or version 1 is served; any
// other version is refused (Triton's 404), naming the model, the version
// asked and the one served.
func TestVersionError(t *testing.T) {
	for path, refused := range map[string]bool{
		"/v2/models/mlp":                  false,
		"/v2/models/mlp/versions/1/ready": false,
		"/v2/models/mlp/versions/2":       true,
		"/v2/models/mlp/versions/0/infer": true,
		"/v2/models/mlp/versions/x/stats": true,
	} {
		r, _ := ParseRoute(path)
		msg := r.VersionError()
		if (msg != "") != refused {
			t.Errorf("%s: VersionError = %q, want refused %v", path, msg, refused)
		}
		if refused && (!strings.Contains(msg, `"mlp"`) || !strings.Contains(msg, `"`+r.Version+`"`) || !strings.Contains(msg, "version 1")) {
			t.Errorf("%s: VersionError = %q, want the model, the version asked and the one served", path, msg)
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
