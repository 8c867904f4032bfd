package imageprep

import (
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// FuzzPreprocess feeds arbitrary bytes to both decoders' entry point: it
// must never panic, and every failure must be one of the image errors.
func FuzzPreprocess(f *testing.F) {
	jpg := encodeJPEG(f, gradient(24, 16))
	f.Add(jpg)
	f.Add(jpg[:len(jpg)/2])
	f.Add(hugeJPEG(f))
	f.Add(encodePNG(f, gradient(16, 24)))
	f.Add(pngHeader(100000, 100000))
	f.Add(pngHeader(0, 0))
	f.Add(gifImage(f))
	f.Add(hostile.ScanBombJPEGSized(16, 40)) // over the scan limit
	f.Add(hostile.ScanBombJPEGSized(9, 3))
	f.Add(hostile.PNGBomb(3, 2)) // 16-bit RGBA
	configs := []Config{
		{Width: 8, Height: 8, MaxPixels: 1 << 20},
		{Width: 5, Height: 9, Resize: ShorterCrop, Interpolation: Nearest, ChannelOrder: BGR, Layout: NHWC, MaxPixels: 1 << 20},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range configs {
			if err := c.Preprocess(make([]byte, c.ImageBytes()), data); err != nil && !isImageError(err) {
				t.Fatalf("Preprocess(% x...) = %v, want nil or an image error", data[:min(len(data), 16)], err)
			}
		}
	})
}
