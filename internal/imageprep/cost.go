package imageprep

// What decoding an image costs in memory, known from its header before a
// pixel is decoded: Header.DecodeBytes. A prep worker weighs its decodes
// by it (its decode gate), so that the memory its decodes hold is bounded
// by a budget, and small images are told from large ones. The estimate
// follows what Preprocess allocates, buffer by buffer, and errs high:
//
//   - the decoded pixels: a JPEG as 8-bit RGB at the DCT scale it will
//     be decoded at (jpegScale); a PNG on the fast path as its inflated
//     rows, plus a copy of its IDAT data (at most the encoded size); a
//     PNG through image/png as its decoded image (decodedBytes), plus the
//     8-bit RGB copy rgbPixels makes of any image that is not 8-bit RGB
//     or RGBA;
//   - what the decoder holds besides: a JPEG of more than one scan
//     (progressive) keeps every DCT coefficient of the image until its
//     last scan (libjpeg 2 bytes each, image/jpeg 4, at full size
//     whatever the scale), and image/jpeg decodes to YCbCr first;
//   - the bilinear resize's intermediate rows: one output-width row per
//     source row it reads (resampleBytes). For a tall, thin image this is
//     the largest part: a 1×40,000,000 PNG (160 MB decoded, 160 KB
//     sent) would need 27 GB of rows for a 224-wide tensor.
//
// Buffers of a few KiB (a kernel, one output row) are not counted.

// resampleBytes is the bilinear pass's intermediate buffer for a source
// decoded at w×h: at most one Width-wide RGB row per source row it reads,
// or per output row when the height does not change. Nearest keeps none.
func (c *Config) resampleBytes(h int) int64 {
	if c.Interpolation == Nearest {
		return 0
	}
	return int64(max(h, c.Height)) * int64(c.Width) * 3
}

// jpegCost is DecodeBytes for a JPEG whose markers walkJPEG read.
func (c *Config) jpegCost(info jpegInfo) int64 {
	f := c.jpegScale(info.w, info.h)
	sw, sh := f.scaled(info.w), f.scaled(info.h)
	samples := int64(info.w) * int64(info.h) * int64(info.samples64) / 64
	return int64(sw)*int64(sh)*3 + jpegDecoderBytes(samples, info.scans) + c.resampleBytes(sh)
}

// pngCost is DecodeBytes for a PNG with header h and size encoded bytes.
// A PNG the fast path takes that turns out to be one it doubts goes to
// image/png after the fast path has freed its buffer, so the larger of
// the two counts, not their sum.
func (c *Config) pngCost(h pngIHDR, encoded int) int64 {
	std := h.decodedBytes()
	if !h.isRGB8() {
		std += h.Pixels() * 3 // rgbPixels' conversion
	}
	n := std
	if cgoEnabled && h.isRGB8() && h.interlace == 0 {
		bpp := int64(3)
		if h.colour == 6 {
			bpp = 4
		}
		n = max(std, int64(h.Height)*(int64(h.Width)*bpp+1)+int64(encoded))
	}
	return n + c.resampleBytes(h.Height)
}

// isRGB8 reports whether image/png decodes the PNG to 8-bit RGBA or
// NRGBA, which rgbPixels reads in place: 8-bit RGB or RGBA.
func (h *pngIHDR) isRGB8() bool { return h.depth == 8 && (h.colour == 2 || h.colour == 6) }
