package hostile

// jpegBits writes a JPEG entropy-coded segment: bits most significant
// first, every 0xff byte followed by a stuffed 0x00, and the last byte
// padded with 1 bits, as T.81 F.1.2.3 requires.
type jpegBits struct {
	out  []byte
	acc  uint32
	nacc uint
}

// put appends the low n bits of v (n <= 16).
func (w *jpegBits) put(v uint32, n uint) {
	w.acc = w.acc<<n | v&(1<<n-1)
	w.nacc += n
	for w.nacc >= 8 {
		w.nacc -= 8
		w.byte(byte(w.acc >> w.nacc))
	}
}

func (w *jpegBits) byte(b byte) {
	w.out = append(w.out, b)
	if b == 0xff {
		w.out = append(w.out, 0)
	}
}

// flush pads the last byte with 1 bits and returns the segment.
func (w *jpegBits) flush() []byte {
	if w.nacc > 0 {
		w.put(1<<(8-w.nacc)-1, 8-w.nacc)
	}
	return w.out
}

// deflateBits writes a DEFLATE stream (RFC 1951): bits least significant
// first; Huffman codes, which are defined most significant bit first, go
// through code.
type deflateBits struct {
	out  []byte
	acc  uint64
	nacc uint
}

// put appends the low n bits of v, least significant first.
func (w *deflateBits) put(v uint64, n uint) {
	w.acc |= (v & (1<<n - 1)) << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

// code appends an n-bit Huffman code, most significant bit first.
func (w *deflateBits) code(c uint64, n uint) {
	var rev uint64
	for i := range n {
		rev |= (c >> i & 1) << (n - 1 - i)
	}
	w.put(rev, n)
}

// flush pads the last byte with zeros and returns the stream.
func (w *deflateBits) flush() []byte {
	if w.nacc > 0 {
		w.put(0, 8-w.nacc)
	}
	return w.out
}
