package imageprep

import (
	"testing"
)

// benchConfig is the work scripts/bench-imageprep times Pillow doing:
// decode, stretch to 224×224 bilinear, scale to 0–1 and normalise with the
// ImageNet mean and std into an FP32 NCHW tensor.
func benchConfig() Config {
	return Config{Width: 224, Height: 224, Scale: 1.0 / 255,
		Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}
}

// BenchmarkPreprocessPhotos times one Preprocess per shared photo, one
// sub-benchmark per photo.
func BenchmarkPreprocessPhotos(b *testing.B) {
	for _, name := range photos(b) {
		data := readPhoto(b, name)
		b.Run(name, func(b *testing.B) {
			c := benchConfig()
			dst := make([]byte, c.ImageBytes())
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Preprocess(dst, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
