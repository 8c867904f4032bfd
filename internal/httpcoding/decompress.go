package httpcoding

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// Errors of Decompress.
var (
	// ErrTooLarge: the decompressed body is larger than the limit.
	ErrTooLarge = errors.New("decompressed body is larger than the limit")
	// ErrBudget: the caller's reserve function refused more memory.
	ErrBudget = errors.New("no memory left for decompressed bodies")
	// ErrCorrupt: the body is not valid data of its coding.
	ErrCorrupt = errors.New("body is not valid compressed data")
)

// firstChunk is the first output buffer when the input gives no better
// idea: large enough that small requests decompress in one read.
const firstChunk = 64 << 10

// Decompress decodes src, compressed with c, into a new buffer of at most
// limit bytes. Before each allocation it calls reserve with the bytes the
// buffer grows by; when reserve returns false it stops with ErrBudget.
// The caller gives back what it reserved once it drops the result (also
// on error). The buffer doubles from 64 KiB (or 4 × len(src)), capped at
// limit+1 bytes, so at most limit+1 bytes are ever allocated at once
// (plus the smaller buffer being copied while it grows).
func Decompress(c Coding, src []byte, limit int, reserve func(n int) bool) ([]byte, error) {
	if c == Identity {
		return src, nil
	}
	r, err := newReader(c, src)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	buf, err := readBounded(r, min(max(firstChunk, 4*len(src)), limit+1), limit, reserve)
	if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrBudget) {
		err = fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	return buf, err
}

// readBounded reads r to its end into a buffer of first bytes, growing it
// by doubling up to limit+1; more than limit bytes of output is ErrTooLarge.
func readBounded(r io.Reader, first, limit int, reserve func(int) bool) ([]byte, error) {
	if !reserve(first) {
		return nil, ErrBudget
	}
	buf := make([]byte, 0, first)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
			}
			grow := min(cap(buf), limit+1-cap(buf))
			if !reserve(grow) {
				return nil, ErrBudget
			}
			buf = append(make([]byte, 0, cap(buf)+grow), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// newReader opens src as c. Deflate is zlib-wrapped unless src does not
// start with a zlib header, then raw deflate.
func newReader(c Coding, src []byte) (io.Reader, error) {
	br := bytes.NewReader(src)
	switch {
	case c == Gzip:
		return gzip.NewReader(br)
	case isZlibHeader(src):
		return zlib.NewReader(br)
	default:
		return flate.NewReader(br), nil
	}
}

// isZlibHeader reports whether b starts with a zlib header (RFC 1950):
// method 8 (deflate), a window of at most 32 KiB, and the check bits.
func isZlibHeader(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}
