//go:build !cgo

package imageprep

import (
	"bytes"
	"fmt"
	"image/color"
	"image/jpeg"
)

// decodeJPEG reads the JPEG's header, checks its size, and decodes it with
// image/jpeg, at full size (Inspect has bounded its scans, which
// image/jpeg does not): without cgo there is no DCT-domain scaling, so
// large photos cost several times more than with libjpeg-turbo.
func (c *Config) decodeJPEG(data []byte, s *scratch) (pixels, error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return pixels{}, fmt.Errorf("%w: JPEG header: %v", ErrCorrupt, err)
	}
	if err := c.checkSize("JPEG", cfg.Width, cfg.Height); err != nil {
		return pixels{}, err
	}
	if cfg.ColorModel == color.CMYKModel {
		return pixels{}, fmt.Errorf("%w: CMYK JPEG; convert it to RGB", ErrUnsupportedFormat)
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return pixels{}, fmt.Errorf("%w: JPEG of %d×%d: %v", ErrCorrupt, cfg.Width, cfg.Height, err)
	}
	return rgbPixels(img, s)
}

// jpegScale is 1/1: image/jpeg has no DCT-domain scaling.
func (c *Config) jpegScale(w, h int) scaleFactor { return scaleFactor{1, 1} }

// jpegDecoderBytes is what image/jpeg holds besides the RGB copy
// rgbPixels makes: its YCbCr image, one byte a sample, and, for a JPEG of
// more than one scan, every DCT coefficient as an int32.
func jpegDecoderBytes(samples int64, scans int) int64 {
	if scans > 1 {
		return 5 * samples
	}
	return samples
}
