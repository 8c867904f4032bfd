package imageprep

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// The fast PNG path decodes the PNGs photos come as (8-bit RGB or RGBA,
// not interlaced) straight into our scratch memory: the IDAT stream is
// inflated in one call of a fast inflater (libdeflate, with cgo), then the
// rows are unfiltered in place. Anything else, and any PNG this path finds
// wrong, goes to image/png, which also words the errors.

// errNotFast means the PNG is valid as far as seen but not one the fast
// path handles.
var errNotFast = errors.New("not a fast-path PNG")

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// fastPNG is a parsed PNG the fast path can decode.
type fastPNG struct {
	w, h int
	bpp  int    // 3 (RGB) or 4 (RGBA)
	zlib []byte // the IDAT chunks' data, concatenated
}

// parseFastPNG walks the chunks, checking every CRC, and collects IDAT.
// scratch is reused for the concatenated IDAT data when there is more than
// one chunk.
func parseFastPNG(data, scratch []byte) (fastPNG, []byte, error) {
	var p fastPNG
	if len(data) < 8 || string(data[:8]) != string(pngMagic) {
		return p, scratch, errNotFast
	}
	rest := data[8:]
	seenIDAT, single := false, true
	for len(rest) >= 12 {
		n := int(binary.BigEndian.Uint32(rest))
		if n < 0 || n > len(rest)-12 {
			return p, scratch, errNotFast
		}
		typ, body := string(rest[4:8]), rest[8:8+n]
		if crc32.ChecksumIEEE(rest[4:8+n]) != binary.BigEndian.Uint32(rest[8+n:]) {
			return p, scratch, errNotFast
		}
		switch typ {
		case "IHDR":
			if n != 13 || p.w != 0 {
				return p, scratch, errNotFast
			}
			p.w, p.h = int(binary.BigEndian.Uint32(body)), int(binary.BigEndian.Uint32(body[4:]))
			depth, colour, interlace := body[8], body[9], body[12]
			switch {
			case depth != 8 || interlace != 0 || body[10] != 0 || body[11] != 0:
				return p, scratch, errNotFast
			case colour == 2:
				p.bpp = 3
			case colour == 6:
				p.bpp = 4
			default:
				return p, scratch, errNotFast
			}
		case "IDAT":
			if p.w == 0 {
				return p, scratch, errNotFast
			}
			switch {
			case !seenIDAT:
				p.zlib, seenIDAT = body, true
			case single:
				scratch = append(append(scratch[:0], p.zlib...), body...)
				single = false
				p.zlib = scratch
			default:
				scratch = append(scratch, body...)
				p.zlib = scratch
			}
		case "IEND":
			if !seenIDAT || p.w <= 0 || p.h <= 0 {
				return p, scratch, errNotFast
			}
			return p, scratch, nil
		}
		rest = rest[12+n:]
	}
	return p, scratch, errNotFast
}

// unfilter reverses PNG's per-row filters in place; raw holds h rows of
// one filter byte and stride bytes each. It returns the pixel rows packed
// (stride apart), moved down over the filter bytes.
func unfilter(raw []byte, h, stride, bpp int) ([]byte, error) {
	prev := make([]byte, 0) // the row above; none for the first
	out := raw[:0]
	for y := range h {
		line := raw[y*(stride+1) : (y+1)*(stride+1)]
		filter, cur := line[0], line[1:]
		switch filter {
		case 0:
		case 1: // Sub
			for i := bpp; i < len(cur); i++ {
				cur[i] += cur[i-bpp]
			}
		case 2: // Up
			if len(prev) > 0 {
				prev := prev[:len(cur)]
				for i := range cur {
					cur[i] += prev[i]
				}
			}
		case 3: // Average
			if len(prev) == 0 {
				for i := bpp; i < len(cur); i++ {
					cur[i] += cur[i-bpp] / 2
				}
				break
			}
			prev := prev[:len(cur)]
			for i := range bpp {
				cur[i] += prev[i] / 2
			}
			for i := bpp; i < len(cur); i++ {
				cur[i] += byte((int(cur[i-bpp]) + int(prev[i])) / 2)
			}
		case 4: // Paeth
			paeth(cur, prev, bpp)
		default:
			return nil, errNotFast
		}
		// Pack the row over the filter bytes: out grows by stride per
		// row, always behind the row being read.
		out = append(out, cur...)
		prev = out[len(out)-stride:]
	}
	return out, nil
}

// paeth reverses the Paeth filter on one row.
func paeth(cur, prev []byte, bpp int) {
	if len(prev) == 0 {
		// Above is zero: the predictor is the left pixel.
		for i := bpp; i < len(cur); i++ {
			cur[i] += cur[i-bpp]
		}
		return
	}
	prev = prev[:len(cur)]
	for i := range bpp {
		cur[i] += prev[i]
	}
	for i := bpp; i < len(cur); i++ {
		a, b, c := int(cur[i-bpp]), int(prev[i]), int(prev[i-bpp])
		pa, pb, pc := b-c, a-c, a+b-2*c
		if pa < 0 {
			pa = -pa
		}
		if pb < 0 {
			pb = -pb
		}
		if pc < 0 {
			pc = -pc
		}
		switch {
		case pa <= pb && pa <= pc:
			cur[i] += byte(a)
		case pb <= pc:
			cur[i] += byte(b)
		default:
			cur[i] += byte(c)
		}
	}
}
