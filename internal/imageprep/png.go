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
	if p, s.tmp, err = parseFastPNG(data, s.tmp); err != nil {
		return pixels{}, false
	}
	stride := p.w * p.bpp
	s.rgb = grow(s.rgb, p.h*(stride+1))
	if inflateZlib(s.rgb, p.zlib) != nil {
		return pixels{}, false
	}
	pix, err := unfilter(s.rgb, p.h, stride, p.bpp)
	if err != nil {
		return pixels{}, false
	}
	return pixels{pix: pix, w: p.w, h: p.h, stride: stride, bpp: p.bpp, origW: p.w, origH: p.h}, true
}
