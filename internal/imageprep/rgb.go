package imageprep

import (
	"fmt"
	"image"
	"image/color"
)

// rgbPixels views img, as image/png or image/jpeg decoded it, as pixels:
// without a copy for 8-bit RGB(A), else converted into s.rgb row by row
// from the image's own Pix, never through At (an interface call, a boxed
// colour and a conversion per pixel: two seconds for 36 megapixels). Alpha is ignored, as in Pillow's
// convert("RGB"); 16-bit samples keep their high byte.
func rgbPixels(img image.Image, s *scratch) (pixels, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	p := pixels{w: w, h: h, origW: w, origH: h}
	switch m := img.(type) {
	case *image.NRGBA:
		p.pix, p.stride, p.bpp = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, 4
		return p, nil
	case *image.RGBA: // image/png uses RGBA only for opaque images
		p.pix, p.stride, p.bpp = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, 4
		return p, nil
	}
	row, err := rowConverter(img)
	if err != nil {
		return pixels{}, err
	}
	rgb := s.rgb.grow(w * h * 3)
	p.pix, p.stride, p.bpp = rgb, w*3, 3
	for y := range h {
		row(rgb[y*w*3:(y+1)*w*3], b.Min.X, b.Min.Y+y)
	}
	return p, nil
}

// rowConverter returns the function that writes row y of img, from
// column x0, as 8-bit RGB into out (len(out)/3 pixels).
func rowConverter(img image.Image) (func(out []byte, x0, y int), error) {
	switch m := img.(type) {
	case *image.Gray:
		return func(out []byte, x0, y int) { greyRow(out, m.Pix[m.PixOffset(x0, y):], 1) }, nil
	case *image.Gray16:
		return func(out []byte, x0, y int) { greyRow(out, m.Pix[m.PixOffset(x0, y):], 2) }, nil
	case *image.NRGBA64: // 16-bit with alpha or a transparent colour
		return func(out []byte, x0, y int) { highBytesRow(out, m.Pix[m.PixOffset(x0, y):]) }, nil
	case *image.RGBA64: // image/png: opaque 16-bit, so not premultiplied
		return func(out []byte, x0, y int) { highBytesRow(out, m.Pix[m.PixOffset(x0, y):]) }, nil
	case *image.Paletted:
		pal := paletteRGB(m.Palette)
		return func(out []byte, x0, y int) { paletteRow(out, m.Pix[m.PixOffset(x0, y):], pal) }, nil
	case *image.YCbCr: // image/jpeg, in builds without cgo
		return func(out []byte, x0, y int) { ycbcrRow(out, m, x0, y) }, nil
	}
	return nil, fmt.Errorf("%w: decoded to %T, which has no RGB conversion here", ErrUnsupportedFormat, img)
}

// greyRow expands grey samples of size bytes each (their first, high,
// byte counts) to RGB.
func greyRow(out, row []byte, size int) {
	for x := range len(out) / 3 {
		v := row[x*size]
		out[3*x], out[3*x+1], out[3*x+2] = v, v, v
	}
}

// highBytesRow keeps the high bytes of R, G and B of 16-bit RGBA pixels.
func highBytesRow(out, row []byte) {
	for x := range len(out) / 3 {
		out[3*x], out[3*x+1], out[3*x+2] = row[8*x], row[8*x+2], row[8*x+4]
	}
}

// paletteRGB is pal's colours as RGB, unpremultiplied, 256 entries:
// image/png pads a short palette with opaque black, and the rest are
// black too.
func paletteRGB(pal color.Palette) *[256][3]byte {
	var rgb [256][3]byte
	for i, col := range pal[:min(len(pal), 256)] {
		n := color.NRGBAModel.Convert(col).(color.NRGBA)
		rgb[i] = [3]byte{n.R, n.G, n.B}
	}
	return &rgb
}

// paletteRow looks the indices of a row up in pal.
func paletteRow(out, row []byte, pal *[256][3]byte) {
	for x := range len(out) / 3 {
		copy(out[3*x:3*x+3], pal[row[x]][:])
	}
}

func ycbcrRow(out []byte, m *image.YCbCr, x0, y int) {
	for x := range len(out) / 3 {
		yi, ci := m.YOffset(x0+x, y), m.COffset(x0+x, y)
		out[3*x], out[3*x+1], out[3*x+2] = color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
	}
}
