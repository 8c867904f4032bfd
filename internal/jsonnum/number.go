package jsonnum

import (
	"math"
	"strconv"
	"unsafe"
)

// Number is a JSON number literal split into a decimal mantissa and
// exponent while its grammar is checked, so that the common conversions
// need no second pass over the digits.
type Number struct {
	mant  uint64 // the first (up to 19) significant digits
	exp10 int    // the value is mant × 10^exp10, give or take dropped digits
	neg   bool
	trunc bool // non-zero digits beyond the 19th were dropped
	isInt bool // no fraction and no exponent: an integer literal
}

// maxMantDigits is how many decimal digits always fit a uint64.
const maxMantDigits = 19

// Scan reads the JSON number starting at b[i]. It returns the offset
// just past it, or, when ok is false, the offset of the offending byte.
func Scan(b []byte, i int) (n Number, end int, ok bool) {
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	if i >= len(b) {
		return n, i, false
	}
	var mant uint64
	nd, exp := 0, 0
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for ; i < len(b); i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			if nd < maxMantDigits {
				mant = mant*10 + uint64(d)
				nd++
			} else {
				exp++
				n.trunc = n.trunc || d != 0
			}
		}
	default:
		return n, i, false
	}
	n.isInt = true
	if i < len(b) && b[i] == '.' {
		n.isInt = false
		i++
		start := i
		for ; i < len(b); i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			switch {
			case mant == 0 && d == 0: // a leading zero is not significant
				exp--
			case nd < maxMantDigits:
				mant = mant*10 + uint64(d)
				nd++
				exp--
			default:
				n.trunc = n.trunc || d != 0
			}
		}
		if i == start {
			return n, i, false
		}
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		n.isInt = false
		e, j, ok := scanExponent(b, i+1)
		if !ok {
			return n, j, false
		}
		exp += e
		i = j
	}
	n.mant, n.exp10 = mant, exp
	return n, i, true
}

// scanExponent reads the signed digits after 'e'. Exponents are clamped far
// beyond any float range so that a hostile "1e999999999999" cannot overflow.
func scanExponent(b []byte, i int) (int, int, bool) {
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start, e := i, 0
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		if e < 1_000_000 {
			e = e*10 + int(d)
		}
	}
	if neg {
		e = -e
	}
	return e, i, i > start
}

// pow10 and pow10neg are read-only tables of exactly and correctly rounded
// powers of ten.
var (
	pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
		1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
	pow10neg = [...]float64{1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8,
		1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18,
		1e-19, 1e-20, 1e-21, 1e-22}
)

// approx returns |value| as a float64 within a few units in the last place
// (mantissa rounding, one product and dropped digits beyond the 19th each
// add at most about half a unit), or false when the exponent is too far out
// for the tables. It is never zero, infinite or subnormal.
func (n *Number) approx() (float64, bool) {
	if n.exp10 < -22 || n.exp10 > 22 || n.mant == 0 {
		return 0, false
	}
	f := float64(n.mant)
	if n.exp10 < 0 {
		return f * pow10neg[-n.exp10], true
	}
	return f * pow10[n.exp10], true
}

// slack is how many float64 units in the last place approx may be off, with
// a wide margin: rounding a value known to lie within f±slack ulps gives
// the correctly rounded result whenever both ends round alike.
const slack = 16

// Float32 returns the literal tok (whose parse is n) rounded to the nearest
// float32, ties to even; beyond the range it is ±Inf.
func (n *Number) Float32(tok []byte) float32 {
	if n.mant == 0 {
		return float32(n.signed(0))
	}
	if f, ok := n.approx(); ok {
		bits := math.Float64bits(f)
		lo := float32(math.Float64frombits(bits - slack))
		if lo == float32(math.Float64frombits(bits+slack)) {
			if n.neg {
				return -lo
			}
			return lo
		}
	}
	// Ambiguous or far out: strconv is exact. ErrRange comes with ±Inf or 0,
	// which is the rounding we want.
	v, _ := strconv.ParseFloat(unsafeString(tok), 32)
	return float32(v)
}

// Float64 returns tok rounded to the nearest float64, ties to even.
func (n *Number) Float64(tok []byte) float64 {
	if n.mant == 0 {
		return n.signed(0)
	}
	// Clinger's fast path: both operands exact, so one IEEE operation rounds
	// correctly.
	if !n.trunc && n.mant <= 1<<53 && n.exp10 >= -22 && n.exp10 <= 22 {
		f := float64(n.mant)
		if n.exp10 < 0 {
			f /= pow10[-n.exp10]
		} else {
			f *= pow10[n.exp10]
		}
		return n.signed(f)
	}
	v, _ := strconv.ParseFloat(unsafeString(tok), 64)
	return v
}

// Half returns tok rounded to a 16-bit float by round (tensor.FP16From64 or
// tensor.BF16From64). Rounding from the float64 nearest to tok could differ from
// rounding tok itself only when that float64 is exactly a tie of the 16-bit
// format, which needs a literal of 17 or more significant digits within
// 2^-53 of the tie; we accept that case.
func (n *Number) Half(tok []byte, round func(float64) uint16) uint16 {
	if n.mant == 0 {
		return round(n.signed(0))
	}
	if f, ok := n.approx(); ok {
		bits := math.Float64bits(f)
		lo := round(math.Float64frombits(bits - slack))
		if lo == round(math.Float64frombits(bits+slack)) {
			return round(n.signed(math.Float64frombits(bits)))
		}
	}
	return round(n.Float64(tok))
}

func (n *Number) signed(f float64) float64 {
	if n.neg {
		return -f
	}
	return f
}

// Int returns the integer literal's value if it is an integer in [lo, hi].
func (n *Number) Int(lo, hi int64) (int64, bool) {
	if !n.isInt || n.exp10 != 0 { // exp10 > 0 means 20 or more digits
		return 0, false
	}
	if n.neg {
		if n.mant > uint64(-(lo+1))+1 {
			return 0, false
		}
		return int64(-n.mant), true // two's complement also covers MinInt64
	}
	if n.mant > uint64(hi) {
		return 0, false
	}
	return int64(n.mant), true
}

// Uint returns the integer literal's value if it is an integer in [0, hi].
func (n *Number) Uint(tok []byte, hi uint64) (uint64, bool) {
	if !n.isInt || (n.neg && n.mant != 0) {
		return 0, false
	}
	v := n.mant
	if n.exp10 != 0 { // 20 or more digits: only strconv knows if it fits
		var err error
		if v, err = strconv.ParseUint(unsafeString(tok), 10, 64); err != nil {
			return 0, false
		}
	}
	return v, v <= hi
}

// unsafeString views b as a string without copying, for strconv; the
// string must not outlive b or be retained.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// IsSpace reports whether c is JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// IsInt reports whether the literal had no fraction and no exponent.
func (n *Number) IsInt() bool { return n.isInt }
