package httpcoding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

// Errors of Decompress.
var (
	// ErrTooLarge: the decompressed body is larger than the limit.
	ErrTooLarge = errors.New("decompressed body is larger than the limit")
	// ErrBudget: the caller's charge could not grow (budget.ErrBusy, or
	// *budget.TooLargeError).
	ErrBudget = errors.New("no memory left for decompressed bodies")
	// ErrCorrupt: the body is not valid data of its coding.
	ErrCorrupt = errors.New("body is not valid compressed data")
)

// chunkSize is the unit a body of unknown size is inflated in: chunks
// come from a pool, so inflating a bomb up to the limit reuses memory
// earlier requests touched and leaves no garbage behind.
const chunkSize = 256 << 10

// maxHintRatio bounds the gzip trailer a Decompress trusts to size its
// buffer: a body declaring more than this many times its own size (plus a
// chunk) is inflated in chunks like any other, so a bomb cannot make every
// request allocate a fresh buffer of the limit by lying in its last
// member's trailer. JSON tensors compress about 3:1.
const maxHintRatio = 32

var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// meter counts against the caller's charge what a decompression holds
// on top of what the charge held when it began (base): take grows the
// charge, give shrinks it back.
type meter struct {
	c          *budget.Charge
	base, held int64
}

// take grows the charge by n bytes, or reports that it cannot.
func (m *meter) take(n int) bool {
	if m.c.Grow(m.base+m.held+int64(n)) != nil {
		return false
	}
	m.held += int64(n)
	return true
}

// give shrinks the charge by n bytes, taken before.
func (m *meter) give(n int) {
	m.held -= int64(n)
	m.c.Shrink(m.base + m.held)
}

// Decompress decodes src, compressed with c, into a new buffer of at most
// limit bytes, growing charge (internal/budget; nil: no bound) by every
// byte it allocates, and shrinking it by what it drops. On success the
// charge holds cap(out) bytes more than it held before, for the caller to
// release with the rest once it drops out; on an error it holds what it
// held before. The charge is the caller's alone while it runs. An honest gzip body is inflated straight
// into one buffer of the size its trailer declares (gzipSize); any other
// body in pooled 256 KiB chunks, copied into one buffer of its exact size
// once it ended within the limit. So a bomb holds at most limit + 256 KiB
// of pooled chunks while it inflates, and a body at most twice its size
// for the moment of the copy.
func Decompress(c Coding, src []byte, limit int, charge *budget.Charge) ([]byte, error) {
	b := &meter{c: charge, base: charge.Bytes()}
	if c == Identity {
		return src, nil
	}
	r, err := newReader(c, src)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	var first []byte
	if hint, ok := gzipSize(src); c == Gzip && ok && hint <= int64(limit) && hint <= maxHintRatio*int64(len(src))+chunkSize {
		if !b.take(int(hint) + 1) {
			return nil, ErrBudget
		}
		first = make([]byte, hint+1)
		n, err := fill(r, first)
		if err == io.EOF {
			return first[:n], nil
		}
		if err != nil {
			b.give(len(first))
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
		}
		defer b.give(len(first)) // more than declared: first becomes the first chunk
	}
	out, err := readChunked(r, first, limit, b)
	if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrBudget) {
		err = fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	return out, err
}

// fill reads r into buf until buf is full (err nil) or r ends (io.EOF)
// or fails.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// readChunked reads the rest of r after prefix into pooled chunks, then
// copies all of it into one buffer of its exact size, taken from b; more
// than limit bytes in all is ErrTooLarge.
func readChunked(r io.Reader, prefix []byte, limit int, b *meter) ([]byte, error) {
	var chunks []*[]byte
	var lens []int
	defer func() {
		for _, c := range chunks {
			chunkPool.Put(c)
			b.give(chunkSize)
		}
	}()
	total := len(prefix)
	for {
		if !b.take(chunkSize) {
			return nil, ErrBudget
		}
		c := chunkPool.Get().(*[]byte)
		chunks = append(chunks, c)
		n, err := fill(r, *c)
		lens, total = append(lens, n), total+n
		if total > limit {
			return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if !b.take(total) {
		return nil, ErrBudget
	}
	out := append(make([]byte, 0, total), prefix...)
	for i, c := range chunks {
		out = append(out, (*c)[:lens[i]]...)
	}
	return out, nil
}

// gzipSize is the ISIZE field of src's last gzip member: that member's
// size modulo 2^32, so a lower bound of the whole body's decompressed size
// (a body's members add up, and a size is at least its value modulo 2^32).
// It sizes the one buffer an honest body is inflated into when it is
// within the limit. A trailer
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
