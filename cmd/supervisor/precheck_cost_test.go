package main

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
)

// TestPrefixCheckCost measures what the prefix check costs a legitimate
// large request: a 1 MiB binary MLP request, sent back to back to two
// instances in turn, one of this binary and one of PRECHECK_BASE_BIN (a
// build without the check), so both see the same machine. Env-gated: it
// measures, it does not assert a speed.
//
//	PRECHECK_BASE_BIN=/tmp/base.bin SUPERVISOR_BIN=$PWD/bin/supervisor ORT_LIBRARY=... \
//	  go test -count=1 -run TestPrefixCheckCost -v ./cmd/supervisor/
func TestPrefixCheckCost(t *testing.T) {
	base := os.Getenv("PRECHECK_BASE_BIN")
	if base == "" {
		t.Skip("set PRECHECK_BASE_BIN to a build without the prefix check to compare with")
	}
	rounds, _ := strconv.Atoi(os.Getenv("PRECHECK_ROUNDS"))
	rounds = max(rounds, 200)
	o := options{prepWorkers: 1, modelNames: []string{"mlp"}, maxBodyBytes: "64MiB"}
	withCheck := startInstance(t, o)
	o.bin = base
	without := startInstance(t, o)
	const rows = 16384 // 1 MiB of FP32
	header := fmt.Sprintf(`{"inputs":[{"name":"x","datatype":"FP32","shape":[%d,16],"parameters":{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}`, rows, rows*64)
	body := append([]byte(header), orttest.F32Bytes(seq(rows*16, 2))...)
	hdr := map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header)), "Content-Type": "application/octet-stream"}
	lat := map[*instance][]time.Duration{}
	for i := range rounds + 10 {
		for _, in := range []*instance{withCheck, without} {
			start := time.Now()
			code, resp, _ := in.post("/v2/models/mlp/infer", body, hdr)
			if code != http.StatusOK {
				t.Fatalf("%d %.200s", code, resp)
			}
			if i >= 10 { // warm-up
				lat[in] = append(lat[in], time.Since(start))
			}
		}
	}
	q := func(in *instance, p float64) time.Duration {
		l := slices.Clone(lat[in])
		slices.Sort(l)
		return l[int(p*float64(len(l)-1))]
	}
	for _, p := range []float64{0.5, 0.9, 0.99} {
		t.Logf("p%.0f: with the check %v, without %v, ratio %.2f", p*100, q(withCheck, p), q(without, p),
			float64(q(withCheck, p))/float64(q(without, p)))
	}
	if n := metricValue(t, withCheck, `supervisor_prefix_checks_total{outcome="passed"}`); n < float64(rounds) {
		t.Errorf("%v prefix checks passed for %d large requests", n, rounds+10)
	}
}
