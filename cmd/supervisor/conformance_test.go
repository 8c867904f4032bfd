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
// one config, every model with the default warm-up: models that must
// serve and answer their test data correctly (one with no inputs, a
// STRING and a BFLOAT16 one, and models whose zero warm-up ONNX Runtime
// refuses: Reshape, Expand, OneHot, Range, Slice, Cast of an empty
// string), next to models that must be unavailable (a sequence input, an
// operator ONNX Runtime lacks) without keeping the others from serving.
func TestConformanceSample(t *testing.T) {
	if _, err := os.Stat(conformance.DefaultDir); err != nil {
		t.Skipf("no ONNX node tests (apt-get install libonnx-testdata): %v", err)
	}
	want := map[string]string{
		"test_abs":                             conformance.Pass,
		"test_add_bcast":                       conformance.Pass,
		"test_matmul_2d":                       conformance.Pass,
		"test_mod_mixed_sign_int64":            conformance.Pass, // integer Mod: warmed up with ones
		"test_relu":                            conformance.Pass,
		"test_softmax_axis_0":                  conformance.Pass,
		"test_constant":                        conformance.Pass, // no inputs
		"test_cast_STRING_to_FLOAT":            conformance.Pass, // STRING: V2 BYTES; refuses the zero warm-up (empty strings)
		"test_cast_BFLOAT16_to_FLOAT":          conformance.Pass, // BF16 test data stored as UINT16
		"test_reshape_zero_dim":                conformance.Pass, // each of these refuses the zero warm-up, and serves
		"test_expand_dim_changed":              conformance.Pass,
		"test_onehot_with_axis":                conformance.Pass,
		"test_range_float_type_positive_delta": conformance.Pass,
		"test_slice":                           conformance.Pass,
		"test_identity_sequence":               conformance.Unavailable, // a sequence input
		"test_momentum":                        conformance.Unavailable, // an operator ONNX Runtime lacks
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
