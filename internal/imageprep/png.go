package imageprep

import (
	"bytes"
	"fmt"
	"image/png"
)

// decodePNG decodes a PNG that Inspect has passed (h is its header): the
// fast path when it can, else image/png, whose memory checkPNGCost has
// bounded.
func (c *Config) decodePNG(data []byte, h pngIHDR, s *scratch) (pixels, error) {
	if p, ok := s.decodeFastPNG(data); ok {
		return p, nil
	}
	// The fast path may have inflated into s.rgb before doubting the
	// PNG: free it, so that image/png's image is not held on top of it.
	s.rgb.release()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return pixels{}, fmt.Errorf("%w: PNG of %d×%d: %v", ErrCorrupt, h.Width, h.Height, err)
	}
	return rgbPixels(img, s)
}

// decodeFastPNG decodes 8-bit RGB(A), non-interlaced PNGs into s.rgb (see
// png_fast.go); false sends the PNG to image/png.
func (s *scratch) decodeFastPNG(data []byte) (pixels, bool) {
	var p fastPNG
	var err error
	// The IDAT data is never longer than the PNG, so appending it to a
	// buffer of that capacity never reallocates it (a mapping must not
	// be replaced by append behind buf's back).
	idat := s.tmp.grow(len(data))[:0]
	if p, _, err = parseFastPNG(data, idat); err != nil {
		return pixels{}, false
	}
	stride := p.w * p.bpp
	raw := s.rgb.grow(p.h * (stride + 1))
	if inflateZlib(raw, p.zlib) != nil {
		return pixels{}, false
	}
	pix, err := unfilter(raw, p.h, stride, p.bpp)
	if err != nil {
		return pixels{}, false
	}
	return pixels{pix: pix, w: p.w, h: p.h, stride: stride, bpp: p.bpp, origW: p.w, origH: p.h}, true
}
