package jsonnum

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// randomLiterals returns JSON number literals that stress the float
// conversions: short and long mantissas, exponents near the table edges,
// float32 values printed at several precisions, and exact float32 and
// float64 midpoints with perturbations either side.
func randomLiterals(n int) []string {
	r := rand.New(rand.NewPCG(7, 9))
	out := make([]string, 0, n)
	for len(out) < n {
		switch r.IntN(6) {
		case 0: // random digits with a random decimal exponent
			digits := 1 + r.IntN(22)
			b := []byte{}
			if r.IntN(2) == 0 {
				b = append(b, '-')
			}
			b = append(b, byte('1'+r.IntN(9)))
			if digits > 1 {
				b = append(b, '.')
				for i := 1; i < digits; i++ {
					b = append(b, byte('0'+r.IntN(10)))
				}
			}
			b = append(b, 'e')
			b = strconv.AppendInt(b, int64(r.IntN(90)-45), 10)
			out = append(out, string(b))
		case 1: // a float32 at a random precision
			f := math.Float32frombits(r.Uint32())
			if f != f || math.IsInf(float64(f), 0) {
				continue
			}
			out = append(out, strconv.FormatFloat(float64(f), 'g', 1+r.IntN(17), 32))
		case 2: // exactly halfway between two float32s, and a hair either side
			f := math.Float32frombits(r.Uint32() &^ (1 << 31))
			if f != f || math.IsInf(float64(f), 0) || f == math.MaxFloat32 {
				continue
			}
			mid := (float64(f) + float64(math.Nextafter32(f, math.MaxFloat32))) / 2
			s := strconv.FormatFloat(mid, 'e', -1, 64)
			out = append(out, s,
				strconv.FormatFloat(math.Nextafter(mid, 0), 'e', -1, 64),
				strconv.FormatFloat(math.Nextafter(mid, 1e300), 'e', -1, 64))
		case 3: // image-like values
			out = append(out, strconv.FormatFloat(r.Float64()*4-2, 'f', r.IntN(12), 64))
		case 4: // a float64 at full precision
			out = append(out, strconv.FormatFloat(math.Float64frombits(r.Uint64()>>2), 'g', -1, 64))
		case 5: // zeros and leading zeros
			out = append(out, "0", "-0", "0.000", "0.0000000000000000000000001234567", "1e-46", "1e39", "-3.4028236e38")
		}
	}
	return out
}

func TestFloat32MatchesStrconv(t *testing.T) {
	for _, s := range randomLiterals(200000) {
		want, _ := strconv.ParseFloat(s, 32)
		b := []byte(s)
		n, end, ok := Scan(b, 0)
		if !ok || end != len(b) {
			t.Fatalf("Scan(%q) = ok %v, end %d", s, ok, end)
		}
		if got := n.Float32(b); math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Errorf("general path: %q = %v, want %v", s, got, float32(want))
		}
		got, end, ok := FastFloat32(b, 0)
		if ok && (end != len(b) || math.Float32bits(got) != math.Float32bits(float32(want))) {
			t.Errorf("fast path: %q = %v (end %d), want %v", s, got, end, float32(want))
		}
	}
}

func TestFloat64MatchesStrconv(t *testing.T) {
	for _, s := range randomLiterals(100000) {
		want, _ := strconv.ParseFloat(s, 64)
		b := []byte(s)
		n, _, _ := Scan(b, 0)
		if got := n.Float64(b); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%q = %v, want %v", s, got, want)
		}
	}
}

// TestHalfFromLiteral checks FP16 and BF16 against rounding the exact
// float64 (the literals here have too few digits to hit the double-rounding
// corner documented on number.half).
func TestHalfFromLiteral(t *testing.T) {
	for _, s := range randomLiterals(100000) {
		f, _ := strconv.ParseFloat(s, 64)
		b := []byte(s)
		n, _, _ := Scan(b, 0)
		if got, want := n.Half(b, tensor.FP16From64), tensor.FP16From64(f); got != want {
			t.Errorf("FP16 %q = %#04x, want %#04x", s, got, want)
		}
		if got, want := n.Half(b, tensor.BF16From64), tensor.BF16From64(f); got != want {
			t.Errorf("BF16 %q = %#04x, want %#04x", s, got, want)
		}
	}
}

func TestScanNumberGrammar(t *testing.T) {
	good := []string{"0", "-0", "1", "-1", "0.5", "10.25e3", "1E+2", "1e-2", "123456789012345678901234567890"}
	bad := []string{"", "-", "01x", ".5", "1.", "1.e3", "1e", "1e+", "+1", "-a", "--1"}
	for _, s := range good {
		if _, end, ok := Scan([]byte(s), 0); !ok || end != len(s) {
			t.Errorf("Scan(%q) = end %d ok %v, want the whole literal", s, end, ok)
		}
	}
	for _, s := range bad {
		if _, end, ok := Scan([]byte(s), 0); ok && end == len(s) {
			t.Errorf("Scan(%q) accepted it", s)
		}
	}
}

func TestEightDigits(t *testing.T) {
	for _, s := range []string{"00000000", "12345678", "99999999", "00000001", "10000000"} {
		v := uint64(0)
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(s[i]-'0')
		}
		want, _ := strconv.ParseUint(s, 10, 64)
		if got := eightDigits(v); got != want {
			t.Errorf("eightDigits(%s) = %d", s, got)
		}
	}
	for _, s := range []string{"1", "12", "1234567", "0012", "12345678901234567"} {
		b := []byte("0." + s + "]")
		mant, end := fastDigits(b, 2, 0)
		want, _ := strconv.ParseUint(s, 10, 64)
		if mant != want || end != 2+len(s) {
			t.Errorf("fastDigits(%s) = %d, %d; want %d, %d", s, mant, end, want, 2+len(s))
		}
	}
}

func TestFastFloat32LeadingZeros(t *testing.T) {
	for _, s := range []string{"0.00000000000000000000000", "0.0000000000000000000000", "-0.000000000000000000001234567890123456789", "0.0078431368619203568", "0.00784313686192035681234"} {
		want, _ := strconv.ParseFloat(s, 32)
		got, end, ok := FastFloat32([]byte(s), 0)
		if ok && (end != len(s) || got != float32(want)) {
			t.Errorf("FastFloat32(%q) = %v, want %v", s, got, float32(want))
		}
	}
}
