package jsonnum

import (
	"math"
	"strconv"
	"testing"
)

// FuzzFloat32 checks both float32 paths against strconv on every
// well-formed literal the fuzzer finds.
func FuzzFloat32(f *testing.F) {
	for _, s := range []string{"0", "-1.7582806", "0.48500001430511475", "1e-45", "3.4028235e38", "1.00000011920928955078125", "123456789012345678901e-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		n, end, ok := Scan(b, 0)
		if !ok || end != len(b) {
			return
		}
		want64, _ := strconv.ParseFloat(s, 64)
		want32, _ := strconv.ParseFloat(s, 32)
		if got := n.Float32(b); math.Float32bits(got) != math.Float32bits(float32(want32)) {
			t.Fatalf("general path: %q = %v, want %v", s, got, float32(want32))
		}
		if got, end, ok := FastFloat32(b, 0); ok && (end != len(b) || math.Float32bits(got) != math.Float32bits(float32(want32))) {
			t.Fatalf("fast path: %q = %v, want %v", s, got, float32(want32))
		}
		if got := n.Float64(b); math.Float64bits(got) != math.Float64bits(want64) {
			t.Fatalf("float64: %q = %v, want %v", s, got, want64)
		}
	})
}
