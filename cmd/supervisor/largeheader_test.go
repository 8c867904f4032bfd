package main

import (
	"strings"
	"testing"
)

// TestLargeHeaderReachesThePrepWorker: an inference request whose header
// block is over 4 KiB but under limits.max_header_bytes (16 KiB: a long
// bearer token, cookies) is served. The master admitted it and forwarded
// it whole, and the prep worker's read buffer (fasthttp's 4 KiB default)
// refused it 400 "small read buffer".
func TestLargeHeaderReachesThePrepWorker(t *testing.T) {
	in := startInstance(t, options{modelNames: []string{"mlp"}})
	body := inferBody(t, v2Tensor{Name: "x", Datatype: "FP32", Shape: []int64{1, 16}, Data: seq(16, 1)})
	for _, n := range []int{3 << 10, 12 << 10} {
		code, out, _ := in.post("/v2/models/mlp/infer", body, map[string]string{"X-Trace-Baggage": strings.Repeat("b", n)})
		if code != 200 {
			t.Fatalf("a %d-byte header under max_header_bytes: %d %s, want 200", n, code, out)
		}
	}
}
