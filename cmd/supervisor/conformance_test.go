package main

import (
	"net/http"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/conformance"
)

// TestConformanceSample serves a bounded sample of the ONNX backend node
// tests (Debian's libonnx-testdata; `make conformance` runs them all) in
// one config: models that must serve and answer their test data
// correctly, next to models that must be unavailable (no inputs, a
// sequence input, a warm-up ONNX Runtime rejects, an operator it lacks)
// without keeping the others from serving.
func TestConformanceSample(t *testing.T) {
	if _, err := os.Stat(conformance.DefaultDir); err != nil {
		t.Skipf("no ONNX node tests (apt-get install libonnx-testdata): %v", err)
	}
	want := map[string]string{
		"test_abs":                  conformance.Pass,
		"test_add_bcast":            conformance.Pass,
		"test_matmul_2d":            conformance.Pass,
		"test_mod_mixed_sign_int64": conformance.Pass, // integer Mod: warmed up with ones
		"test_relu":                 conformance.Pass,
		"test_softmax_axis_0":       conformance.Pass,
		"test_constant":             conformance.Unavailable, // no inputs
		"test_identity_sequence":    conformance.Unavailable, // a sequence input
		"test_reshape_zero_dim":     conformance.Unavailable, // rejects the zero warm-up
		"test_momentum":             conformance.Unavailable, // an operator ONNX Runtime lacks
	}
	names := "^("
	for n := range want {
		names += regexp.QuoteMeta(n) + "|"
	}
	cases, err := conformance.Cases(conformance.DefaultDir, regexp.MustCompile(names[:len(names)-1]+")$"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != len(want) {
		t.Fatalf("found %d of the %d sample node tests", len(cases), len(want))
	}
	models := map[string]string{}
	for _, c := range cases {
		models[c.Name] = c.Model
	}
	in := startInstance(t, options{prepWorkers: 1, models: models})
	client := &http.Client{Timeout: time.Minute}
	for _, c := range cases {
		r := conformance.Check(client, in.url, c)
		if r.Outcome != want[c.Name] {
			t.Errorf("%s: %s (%s), want %s", c.Name, r.Outcome, r.Reason, want[c.Name])
		}
	}
}
