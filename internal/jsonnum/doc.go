// Package jsonnum reads JSON number literals straight into the machine
// values a tensor holds (FP32, FP64, FP16, BF16, signed and unsigned
// integers), checking the grammar as it goes: the V2 decoder's
// (internal/v2) inner loop, apart so that its float conversions can be
// read and fuzzed on their own. Scan splits a literal into a decimal
// mantissa and exponent; the Number's methods convert it; FlatFloat32s is
// the fast path for a flat array of FP32 values.
//
// Invariants:
//
//   - Every conversion rounds as strconv.ParseFloat does (to nearest,
//     ties to even), whatever the literal's length: short mantissas take
//     an exact fast path, the rest fall back to strconv
//     (TestFloat32MatchesStrconv, FuzzFloat32).
//   - Scan accepts exactly JSON's number grammar (no leading zeros, no
//     '+', no bare '.'), and reports the offset of the first byte at
//     fault when it refuses.
//   - Int and Uint refuse, rather than wrap, a value outside the range
//     asked for or one with a fraction or exponent.
//   - Nothing allocates: a literal is read in place.
package jsonnum
