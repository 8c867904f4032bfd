package imageprep

import "math"

// fp16Bits rounds f to the nearest IEEE binary16, ties to even. Values
// beyond ±65504 (after rounding) become ±Inf; NaN stays a quiet NaN.
func fp16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased binary16 exponent; < 1 means subnormal
	sig := mant | 1<<23
	shift := uint(13)
	if exp == 0 { // float32 subnormals are far below binary16's range
		return sign
	}
	if e < 1 {
		shift += uint(1 - e)
		e = 1
		if shift > 24 {
			return sign
		}
	}
	q := sig >> shift
	rem, half := sig&(1<<shift-1), uint32(1)<<(shift-1)
	if rem > half || (rem == half && q&1 == 1) {
		q++ // a carry into the exponent is exactly right
	}
	// q still holds the hidden bit for normals, hence e-1.
	v := uint32(e-1)<<10 + q
	if v >= 0x7c00 {
		return sign | 0x7c00
	}
	return sign | uint16(v)
}
