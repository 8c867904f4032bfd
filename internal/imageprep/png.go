package imageprep

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
)

// decodePNG checks the PNG's header, then decodes it with image/png.
func (c *Config) decodePNG(data []byte, s *scratch) (pixels, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return pixels{}, fmt.Errorf("%w: PNG header: %v", ErrCorrupt, err)
	}
	if err := c.checkSize("PNG", cfg.Width, cfg.Height); err != nil {
		return pixels{}, err
	}
	if p, ok := s.decodeFastPNG(data); ok {
		return p, nil
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return pixels{}, fmt.Errorf("%w: PNG of %d×%d: %v", ErrCorrupt, cfg.Width, cfg.Height, err)
	}
	return rgbPixels(img, s), nil
}

// rgbPixels views img as pixels, without a copy for the 8-bit RGB(A)
// images most PNGs decode to, and otherwise by converting into s.rgb.
// Alpha is ignored, as in Pillow's convert("RGB").
func rgbPixels(img image.Image, s *scratch) pixels {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	p := pixels{w: w, h: h, origW: w, origH: h}
	switch m := img.(type) {
	case *image.NRGBA:
		p.pix, p.stride, p.bpp = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, 4
		return p
	case *image.RGBA: // image/png uses RGBA only for opaque images
		p.pix, p.stride, p.bpp = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, 4
		return p
	}
	s.rgb = grow(s.rgb, w*h*3)
	p.pix, p.stride, p.bpp = s.rgb, w*3, 3
	switch m := img.(type) {
	case *image.Gray:
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
			out := s.rgb[y*w*3:]
			for x, v := range row {
				out[3*x], out[3*x+1], out[3*x+2] = v, v, v
			}
		}
	case *image.Paletted:
		var pal [256][3]byte
		for i, col := range m.Palette {
			n := color.NRGBAModel.Convert(col).(color.NRGBA)
			pal[i] = [3]byte{n.R, n.G, n.B}
		}
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
			out := s.rgb[y*w*3:]
			for x, v := range row {
				copy(out[3*x:3*x+3], pal[v][:])
			}
		}
	case *image.YCbCr: // image/jpeg, in builds without cgo
		for y := range h {
			out := s.rgb[y*w*3:]
			for x := range w {
				yi, ci := m.YOffset(b.Min.X+x, b.Min.Y+y), m.COffset(b.Min.X+x, b.Min.Y+y)
				out[3*x], out[3*x+1], out[3*x+2] = color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			}
		}
	default: // 16-bit, gray+alpha, CMYK...: rare, so the generic path
		for y := range h {
			out := s.rgb[y*w*3:]
			for x := range w {
				n := color.NRGBA64Model.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
				out[3*x], out[3*x+1], out[3*x+2] = byte(n.R>>8), byte(n.G>>8), byte(n.B>>8)
			}
		}
	}
	return p
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
