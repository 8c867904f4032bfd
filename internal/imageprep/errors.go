package imageprep

import "errors"

// Errors Preprocess returns, wrapped with details, for images a client sent.
// A server answers all three with a client error (HTTP 400).
var (
	// ErrUnsupportedFormat: the bytes are neither JPEG nor PNG (GIF, WebP,
	// BMP, text...) or use a JPEG colour space that cannot become RGB.
	ErrUnsupportedFormat = errors.New("unsupported image format")
	// ErrTooManyPixels: the header declares more than Config.MaxPixels
	// pixels. Nothing was decoded.
	ErrTooManyPixels = errors.New("image has too many pixels")
	// ErrCorrupt: the bytes start like a JPEG or PNG but do not decode,
	// including truncated files and zero-sized images.
	ErrCorrupt = errors.New("corrupt image")
)
