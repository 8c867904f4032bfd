package jsonnum

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// FlatFloat32s is the fast path for the most common payload: a flat array
// of FP32 values, as image models take. i is the offset just past '['. It
// fills out and returns the number of values written and the offset past
// ']', with done true.
//
// On anything it does not handle (malformed input, nested arrays, null,
// more than 19 significant digits, too many values) it stops with done
// false at the start of the element at fault, having written k values, and
// the general path carries on from there: it produces the error message or
// the rest of the values.
func FlatFloat32s(b []byte, i int, out []byte) (k, end int, done bool) {
	n := len(out) / 4
	for ; ; k++ {
		for i < len(b) && IsSpace(b[i]) {
			i++
		}
		if k == n || i >= len(b) {
			return k, i, false
		}
		v, j, ok := FastFloat32(b, i)
		if !ok {
			return k, i, false
		}
		binary.LittleEndian.PutUint32(out[4*k:], math.Float32bits(v))
		for j < len(b) && IsSpace(b[j]) {
			j++
		}
		switch {
		case j >= len(b):
			return k, i, false
		case b[j] == ',':
			i = j + 1
		case b[j] == ']':
			return k + 1, j + 1, true
		default:
			return k, i, false // the general path rewrites slot k
		}
	}
}

// FastFloat32 reads one JSON number at b[i] as a float32, rounding
// correctly; ok is false when the number is malformed or unusual.
func FastFloat32(b []byte, i int) (v float32, end int, ok bool) {
	var sign uint32
	if b[i] == '-' {
		sign = 1 << 31
		i++
	}
	start := i
	var mant uint64
	for ; i < len(b) && b[i]-'0' <= 9; i++ {
		mant = mant*10 + uint64(b[i]-'0')
	}
	nd, exp := i-start, 0
	if nd == 0 || (nd > 1 && b[start] == '0') { // JSON has no leading zeros
		return 0, i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		frac := i
		mant, i = fastDigits(b, i, mant)
		if i == frac {
			return 0, i, false
		}
		nd += i - frac
		exp = frac - i
		if nd > maxMantDigits && b[start] == '0' {
			// Too many digits, but leading zeros of the fraction are not
			// significant: read it again without them.
			lead := frac
			for lead < i && b[lead] == '0' {
				lead++
			}
			mant, _ = fastDigits(b, lead, 0)
			nd = i - lead
		}
	}
	if nd > maxMantDigits { // mant may have wrapped; the general path copes
		return 0, i, false
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		e, j, ok := scanExponent(b, i+1)
		if !ok {
			return 0, j, false
		}
		exp += e
		i = j
	}
	switch {
	case mant == 0:
	case exp >= -22 && exp <= 22:
		f := float64(mant)
		if exp < 0 {
			f *= pow10neg[-exp]
		} else {
			f *= pow10[exp]
		}
		// f is within a few float64 ulps of the exact value; rounding it
		// to float32 is right unless it lies near a float32 rounding
		// boundary (the low 29 bits near 1<<28) or outside the float32
		// normal range, where the ulp changes.
		bits := math.Float64bits(f)
		e := bits >> 52
		if mid := bits&(1<<29-1) - (1<<28 - slack); mid <= 2*slack || e < 1023-126 || e > 1023+127 {
			v = parseFloat32(b[start:i])
		} else {
			v = float32(f)
		}
	default:
		v = parseFloat32(b[start:i])
	}
	return math.Float32frombits(math.Float32bits(v) | sign), i, true
}

// parseFloat32 is the exact fallback for a well-formed, unsigned literal.
func parseFloat32(tok []byte) float32 {
	f, _ := strconv.ParseFloat(unsafeString(tok), 32) // ErrRange comes with ±Inf or 0
	return float32(f)
}

// fastDigits appends the run of digits at b[i] to mant, eight at a time
// where it can. Digits beyond what fits wrap mant; the caller checks the
// count.
func fastDigits(b []byte, i int, mant uint64) (uint64, int) {
	for i+8 <= len(b) {
		v := binary.LittleEndian.Uint64(b[i:]) - 0x3030303030303030
		// A byte that is not a digit has its high nibble set in v or in
		// v+6; borrows and carries only run from such a byte upwards, past
		// the first non-digit, which is all that is used.
		nonDigit := (v | (v + 0x0606060606060606)) & 0xf0f0f0f0f0f0f0f0
		if nonDigit == 0 {
			mant = mant*100000000 + eightDigits(v)
			i += 8
			continue
		}
		m := bits.TrailingZeros64(nonDigit) / 8
		if m > 0 {
			mant = mant*pow10u[m] + eightDigits(v<<(64-8*m))
			i += m
		}
		return mant, i
	}
	for ; i < len(b) && b[i]-'0' <= 9; i++ {
		mant = mant*10 + uint64(b[i]-'0')
	}
	return mant, i
}

// eightDigits converts eight digit values (0-9, one per byte, the first in
// the lowest byte) to their decimal value, in three multiplications.
func eightDigits(v uint64) uint64 {
	v = (v * 10) + (v >> 8)
	v = ((v & 0x000000ff000000ff) * (100 + (1000000 << 32))) + (((v >> 16) & 0x000000ff000000ff) * (1 + (10000 << 32)))
	return v >> 32
}

// pow10u holds the powers of ten below 10^8, read-only.
var pow10u = [...]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000}
