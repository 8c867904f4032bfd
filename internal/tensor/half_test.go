package tensor

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// halfReference rounds f to a 16-bit format by searching the sorted list
// of all its finite non-negative values: slow, but obviously right.
type halfReference struct {
	bits   []uint16  // non-negative finite encodings, in value order
	values []float64 // their values
	widen  func(uint16) float32
	inf    uint16
}

func newHalfReference(widen func(uint16) float32, inf uint16) *halfReference {
	r := &halfReference{widen: widen, inf: inf}
	for h := uint16(0); h < inf; h++ {
		r.bits = append(r.bits, h)
		r.values = append(r.values, float64(widen(h)))
	}
	return r
}

func (r *halfReference) round(f float64) uint16 {
	sign := uint16(0)
	if math.Signbit(f) {
		sign, f = 0x8000, -f
	}
	i := sort.SearchFloat64s(r.values, f) // values[i-1] < f <= values[i]
	if i == len(r.values) {
		// Beyond the largest finite value: Inf from half an ulp above it,
		// the ulp being the gap to the value below.
		top := r.values[len(r.values)-1]
		if f >= top+(top-r.values[len(r.values)-2])/2 {
			return sign | r.inf
		}
		return sign | r.bits[len(r.bits)-1]
	}
	if r.values[i] == f || i == 0 {
		return sign | r.bits[i]
	}
	lo, hi := r.values[i-1], r.values[i]
	switch {
	case f-lo < hi-f:
		return sign | r.bits[i-1]
	case f-lo > hi-f:
		return sign | r.bits[i]
	case r.bits[i-1]&1 == 0:
		return sign | r.bits[i-1]
	}
	return sign | r.bits[i]
}

func TestHalfRoundingMatchesReference(t *testing.T) {
	formats := []struct {
		name  string
		round func(float64) uint16
		ref   *halfReference
	}{
		{"FP16", FP16From64, newHalfReference(FP16To32, 0x7c00)},
		{"BF16", BF16From64, newHalfReference(BF16To32, 0x7f80)},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range formats {
		var probes []float64
		// Every representable value, and the midpoints and near-midpoints
		// between neighbours: ties must go to even.
		for i, v := range f.ref.values {
			probes = append(probes, v, -v)
			if i+1 < len(f.ref.values) {
				mid := (v + f.ref.values[i+1]) / 2
				probes = append(probes, mid, math.Nextafter(mid, 0), math.Nextafter(mid, math.Inf(1)))
			}
		}
		for i := 0; i < 200000; i++ {
			probes = append(probes, float64(math.Float32frombits(r.Uint32())))
		}
		probes = append(probes, 65504, 65519.99, 65520, 1e10, 1e-10, 5.96e-8, 2.98e-8, 2.99e-8, math.MaxFloat64, math.SmallestNonzeroFloat64)
		for _, p := range probes {
			if math.IsNaN(p) || math.IsInf(p, 0) {
				continue
			}
			if got, want := f.round(p), f.ref.round(p); got != want {
				t.Fatalf("%s(%g) = %#04x, want %#04x", f.name, p, got, want)
			}
		}
	}
}

func TestHalfSpecialValues(t *testing.T) {
	cases := []struct {
		in         float32
		fp16, bf16 uint16
	}{
		{0, 0, 0},
		{float32(math.Copysign(0, -1)), 0x8000, 0x8000},
		{1, 0x3c00, 0x3f80},
		{-2, 0xc000, 0xc000},
		{65504, 0x7bff, 0x4780},                  // BF16 has 8 bits of precision: 65504 rounds to 2^16
		{65520, 0x7c00, 0x4780},                  // FP16: halfway to 2^16 rounds to Inf
		{1 + 1.0/2048, 0x3c00, 0x3f80},           // FP16 tie between 1 and 1+2^-10: to even
		{1 + 3.0/2048, 0x3c02, 0x3f80},           // tie between odd and even: up to even
		{5.960464477539063e-08, 0x0001, 0x3380},  // smallest FP16 subnormal
		{2.9802322387695312e-08, 0x0000, 0x3300}, // half of it: tie to even, zero
		{float32(math.Inf(1)), 0x7c00, 0x7f80},
		{float32(math.Inf(-1)), 0xfc00, 0xff80},
		{3.4028235e38, 0x7c00, 0x7f80}, // BF16: rounds past its max to Inf
	}
	for _, c := range cases {
		if got := FP16From32(c.in); got != c.fp16 {
			t.Errorf("FP16From32(%g) = %#04x, want %#04x", c.in, got, c.fp16)
		}
		if got := BF16From32(c.in); got != c.bf16 {
			t.Errorf("BF16From32(%g) = %#04x, want %#04x", c.in, got, c.bf16)
		}
	}
	nan := float32(math.NaN())
	if h := FP16From32(nan); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("FP16From32(NaN) = %#04x, not a NaN", h)
	}
	if h := BF16From32(nan); h&0x7f80 != 0x7f80 || h&0x7f == 0 {
		t.Errorf("BF16From32(NaN) = %#04x, not a NaN", h)
	}
}

// TestHalfWidenRoundTrips checks that every 16-bit value widens to a float32
// that rounds back to itself.
func TestHalfWidenRoundTrips(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if f := FP16To32(h); f == f && FP16From32(f) != h {
			t.Errorf("FP16 %#04x -> %g -> %#04x", h, f, FP16From32(f))
		}
		if f := BF16To32(h); f == f && BF16From32(f) != h {
			t.Errorf("BF16 %#04x -> %g -> %#04x", h, f, BF16From32(f))
		}
	}
	if f := FP16To32(0x0001); f != 5.960464477539063e-08 {
		t.Errorf("smallest FP16 subnormal widens to %g", f)
	}
	if f := FP16To32(0x3555); f != 0.333251953125 {
		t.Errorf("FP16 0x3555 widens to %g", f)
	}
}
