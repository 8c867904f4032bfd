// Package httpcoding is HTTP content coding as Triton's HTTP endpoint
// speaks it: which Content-Encoding a request body has, which coding an
// Accept-Encoding asks for, and the two codings themselves, gzip and
// deflate, with a bound on what decompressing may allocate.
//
// The model:
//
//   - A request body is identity, gzip (RFC 1952; "x-gzip" is the same)
//     or deflate. Deflate is the zlib format (RFC 1950), as Triton's
//     server and tritonclient (zlib.compress) produce it; a body that does
//     not start with a zlib header is read as a raw deflate stream (RFC
//     1951), which some other clients send for "deflate". Anything else,
//     and a list of codings ("gzip, gzip"), is ErrUnsupported: the caller
//     answers 415.
//   - A response coding is picked from Accept-Encoding as Triton picks it:
//     the highest q-value among identity, deflate and gzip, the first listed
//     on a tie, identity when none is acceptable ("*" is not expanded).
//   - Decompress never holds more than limit bytes of output plus one
//     256 KiB chunk, however small the input (a bomb stops at the limit
//     with ErrTooLarge), and charges every byte it allocates to the
//     caller's internal/budget Charge, so a process can bound the
//     decompressed bytes of all requests at once. A bomb inflates into pooled chunks: it leaves no
//     garbage for the GC, whatever its size.
//   - DecompressPrefix reads the start of a body from its first bytes
//     only, for a check that runs before the rest has arrived.
//
// Invariants: every error Decompress returns is ErrTooLarge, ErrBudget or
// ErrCorrupt (wrapped, for errors.Is); ParseContentEncoding's only error
// is an *UnsupportedError (errors.Is ErrUnsupported).
package httpcoding
