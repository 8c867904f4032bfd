//go:build !cgo

package imageprep

// image/jpeg decodes at full size (no DCT scaling), and its IDCT and colour
// conversion round differently from libjpeg's: measured up to 1 level,
// mean 0.23, on these goldens.
const (
	jpegExactDiff, jpegExactMean   = 2, 0.5
	jpegScaledDiff, jpegScaledMean = 2, 0.5
)
