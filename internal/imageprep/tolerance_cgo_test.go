//go:build cgo

package imageprep

// With libjpeg-turbo a full-size decode is Pillow's own, so the result is
// identical. A DCT-scaled decode (at least dctGap× the target) differs near
// sharp edges: measured up to 4 levels, mean 0.42, on these 64×64 goldens
// (and up to 6, mean 0.29, at 224×224).
const (
	jpegExactDiff, jpegExactMean   = 0, 0
	jpegScaledDiff, jpegScaledMean = 8, 1.0
)
