package imageprep

import (
	"bytes"
	"fmt"
)

// Preprocess decodes one encoded image (JPEG or PNG, recognised from its
// first bytes, whatever a Content-Type claimed) and writes its tensor into
// dst, which must be exactly ImageBytes long: one image of a batch buffer
// or a shared-memory slot. Errors caused by the image wrap
// ErrUnsupportedFormat, ErrTooManyPixels, ErrTooCostly or ErrCorrupt; on
// error dst may have been partly written. Everything Inspect checks is
// checked before any pixel is decoded.
func (c *Config) Preprocess(dst []byte, encoded []byte) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if len(dst) != c.ImageBytes() {
		return fmt.Errorf("imageprep: dst has %d bytes, one %d×%d %s image needs %d",
			len(dst), c.Width, c.Height, c.dtype(), c.ImageBytes())
	}
	s := getScratch()
	defer putScratch(s)
	src, err := c.decode(encoded, s)
	if err != nil {
		return err
	}
	wr := c.newWriter(dst, &s.lut)
	c.resample(&wr, src, s)
	return nil
}

// decode inspects the image, then decodes it.
func (c *Config) decode(encoded []byte, s *scratch) (pixels, error) {
	if sniff(encoded) == "PNG" {
		h, err := c.inspectPNG(encoded)
		if err != nil {
			return pixels{}, err
		}
		return c.decodePNG(encoded, h, s)
	}
	if _, err := c.Inspect(encoded); err != nil {
		return pixels{}, err
	}
	return c.decodeJPEG(encoded, s)
}

// magics are the first bytes of the formats sniff names.
var magics = []struct{ prefix, name string }{
	{"\xff\xd8\xff", "JPEG"},
	{"\x89PNG\r\n\x1a\n", "PNG"},
	{"GIF87a", "GIF"},
	{"GIF89a", "GIF"},
	{"BM", "BMP"},
	{"II*\x00", "TIFF"},
	{"MM\x00*", "TIFF"},
	{"\x00\x00\x00\x0cjP  ", "JPEG 2000"},
}

// sniff names the format of b from its first bytes, like
// http.DetectContentType but for images only.
func sniff(b []byte) string {
	for _, m := range magics {
		if bytes.HasPrefix(b, []byte(m.prefix)) {
			return m.name
		}
	}
	switch {
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "WebP"
	case len(b) >= 12 && string(b[4:8]) == "ftyp":
		return "HEIF/AVIF"
	case len(b) == 0:
		return "no data"
	}
	return fmt.Sprintf("unknown format starting % x", b[:min(len(b), 8)])
}

// checkSize applies the zero-size check and the decompression-bomb guard
// to the size a header declares.
func (c *Config) checkSize(format string, w, h int) error {
	if w <= 0 || h <= 0 {
		return fmt.Errorf("%w: %s header declares %d×%d pixels", ErrCorrupt, format, w, h)
	}
	if n := int64(w) * int64(h); n > c.maxPixels() {
		return fmt.Errorf("%w: %s of %d×%d = %d pixels, over the limit of %d",
			ErrTooManyPixels, format, w, h, n, c.maxPixels())
	}
	return nil
}
