package tensor

import "math"

// The 16-bit float formats: IEEE 754 binary16 (FP16) and bfloat16 (BF16),
// the top half of a float32. Both are converted by one routine that rounds
// a float64 to nearest, ties to even, which is exact for float32 inputs
// because every float32 is a float64.

const (
	fp16Exp, fp16Mant = 5, 10
	bf16Exp, bf16Mant = 8, 7
)

// FP16From64 rounds f to the nearest FP16, ties to even; beyond ±65504 it
// is ±Inf and NaN stays NaN.
func FP16From64(f float64) uint16 { return roundHalf(f, fp16Exp, fp16Mant) }

// BF16From64 rounds f to the nearest BF16, ties to even.
func BF16From64(f float64) uint16 { return roundHalf(f, bf16Exp, bf16Mant) }

// FP16From32 and BF16From32 are the float32 conversions the encoder and
// tests use.
func FP16From32(f float32) uint16 { return FP16From64(float64(f)) }
func BF16From32(f float32) uint16 { return BF16From64(float64(f)) }

// roundHalf rounds f to a binary float with expBits exponent and mantBits
// fraction bits, returned in the low 1+expBits+mantBits bits.
func roundHalf(f float64, expBits, mantBits uint) uint16 {
	bits := math.Float64bits(f)
	sign := uint16(bits>>63) << (expBits + mantBits)
	exp := int(bits>>52) & 0x7ff
	frac := bits & (1<<52 - 1)
	maxExp := uint64(1)<<expBits - 1
	switch {
	case exp == 0x7ff && frac != 0: // NaN: quiet, keep the top payload bits
		return sign | uint16(maxExp<<mantBits|1<<(mantBits-1)|frac>>(52-mantBits))
	case exp == 0x7ff:
		return sign | uint16(maxExp<<mantBits)
	case exp == 0: // zero or float64-subnormal: far below any 16-bit float
		return sign
	}
	bias := 1<<(expBits-1) - 1
	e := exp - 1023 + bias // biased target exponent; < 1 means subnormal
	sig := frac | 1<<52
	shift := uint(52 - mantBits)
	if e < 1 {
		shift += uint(1 - e)
		e = 1
	}
	if shift > 63 {
		return sign // below half the smallest subnormal
	}
	q := sig >> shift
	rem, half := sig&(1<<shift-1), uint64(1)<<(shift-1)
	if rem > half || (rem == half && q&1 == 1) {
		q++ // may carry into the exponent, which is exactly right
	}
	// q holds the hidden bit for normals, so adding (e-1)<<mantBits yields
	// the biased exponent and fraction; subnormals have q < 1<<mantBits.
	v := uint64(e-1)<<mantBits + q
	if v >= maxExp<<mantBits {
		return sign | uint16(maxExp<<mantBits)
	}
	return sign | uint16(v)
}

// halfTo32 widens a 16-bit float to float32, exactly.
func halfTo32(h uint16, expBits, mantBits uint) float32 {
	sign := uint32(h>>(expBits+mantBits)) << 31
	exp := int(h>>mantBits) & (1<<expBits - 1)
	frac := uint32(h) & (1<<mantBits - 1)
	switch {
	case exp == 1<<expBits-1: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<(23-mantBits))
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise, float32 has the range for it
		exp = 1
		for frac&(1<<mantBits) == 0 {
			frac <<= 1
			exp--
		}
		frac &= 1<<mantBits - 1
	}
	exp32 := uint32(exp + 127 - (1<<(expBits-1) - 1))
	return math.Float32frombits(sign | exp32<<23 | frac<<(23-mantBits))
}

func FP16To32(h uint16) float32 { return halfTo32(h, fp16Exp, fp16Mant) }
func BF16To32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
