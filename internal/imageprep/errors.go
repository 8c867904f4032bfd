package imageprep

import "errors"

// Errors Preprocess returns, wrapped with details, for images a client sent.
// A server answers all four with a client error (HTTP 400).
var (
	// ErrUnsupportedFormat: the bytes are neither JPEG nor PNG (GIF, WebP,
	// BMP, text...) or use a JPEG colour space that cannot become RGB.
	ErrUnsupportedFormat = errors.New("unsupported image format")
	// ErrTooManyPixels: the header declares more than Config.MaxPixels
	// pixels. Nothing was decoded.
	ErrTooManyPixels = errors.New("image has too many pixels")
	// ErrTooCostly: the image is within MaxPixels but decoding it would
	// cost far more than decoding an ordinary image of that size: a JPEG
	// coded in too many progressive scans, a 16-bit or interlaced PNG
	// whose decoded form would outgrow what MaxPixels allows an 8-bit
	// RGBA image. Nothing was decoded.
	ErrTooCostly = errors.New("image too costly to decode")
	// ErrCorrupt: the bytes start like a JPEG or PNG but do not decode,
	// including truncated files and zero-sized images.
	ErrCorrupt = errors.New("corrupt image")
)
