package httpcoding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
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
// on error). The buffer starts at 64 KiB, 4 × len(src), or what a gzip
// trailer declares (gzipSize), and doubles, capped at limit+1 bytes, so at most
// limit+1 bytes are ever allocated at once (plus the smaller buffer being
// copied while it grows).
func Decompress(c Coding, src []byte, limit int, reserve func(n int) bool) ([]byte, error) {
	if c == Identity {
		return src, nil
	}
	first := max(firstChunk, 4*len(src))
	if declared, ok := gzipSize(src); c == Gzip && ok && declared <= int64(limit) {
		first = max(first, int(declared)+1) // one allocation for an honest body
	}
	r, err := newReader(c, src)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	buf, err := readBounded(r, min(first, limit+1), limit, reserve)
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

// gzipSize is the ISIZE field of src's last gzip member: that member's
// size modulo 2^32, so a lower bound of the whole body's decompressed size
// (a body's members add up, and a size is at least its value modulo 2^32).
// It sizes the first buffer when it is within the limit. A trailer
// declaring more is not refused outright: a truncated body or one with
// trailing bytes would read as that, and is corrupt, not too large.
func gzipSize(src []byte) (int64, bool) {
	const minMember = 20 // 10-byte header, an empty deflate block, 8-byte trailer
	if len(src) < minMember {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint32(src[len(src)-4:])), true
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

// DecompressPrefix decodes as much of src as it can when src is only the
// first bytes of a body compressed with c: it returns at most n bytes of
// output, the start of the decompressed body, and stops without error at
// the end of src (a truncated stream) or at n. An error is ErrCorrupt:
// those first bytes are already not valid data of the coding. It is for
// checking a body from its first bytes before all of it has arrived.
func DecompressPrefix(c Coding, src []byte, n int) ([]byte, error) {
	if c == Identity {
		return src[:min(len(src), n)], nil
	}
	if len(src) < 2 {
		return nil, nil // not yet enough to tell zlib from raw deflate
	}
	r, err := newReader(c, src)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, nil // not even a whole header yet
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	out := make([]byte, n)
	got, err := io.ReadFull(r, out)
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return out[:got], nil
	default:
		return out[:got], fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
}
