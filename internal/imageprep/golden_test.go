package imageprep

import (
	"path/filepath"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestMatchesPillow compares with the Pillow 9.4 results that
// scripts/gen-imageprep-golden.py wrote into testdata/. The resize is
// Pillow's algorithm, so with the same decoded pixels the result is
// identical: PNGs, and JPEGs decoded at full size by libjpeg-turbo (which
// Debian's Pillow also uses). Decoding a JPEG at a DCT scale, which Pillow's
// resize does not, moves samples near sharp edges by a few levels; the
// bounds below are what that costs on these photos, with some margin.
// Without cgo, image/jpeg's IDCT and its nearest-neighbour chroma
// upsampling differ from libjpeg's by a few levels too.
func TestMatchesPillow(t *testing.T) {
	for _, tt := range []struct {
		golden, photo  string
		resize, interp string
		fullDecode     bool
		maxDiff        int     // largest |Go - Pillow| allowed, in 0–255 levels
		meanDiff       float64 // largest mean |Go - Pillow| allowed
	}{
		{"pineapple_stretch_bilinear", "ortext_pineapple.png", Stretch, Bilinear, false, 0, 0},
		{"pineapple_crop_bilinear", "ortext_pineapple.png", ShorterCrop, Bilinear, false, 0, 0},
		{"pineapple_stretch_nearest", "ortext_pineapple.png", Stretch, Nearest, false, 0, 0},
		{"cat_stretch_bilinear", "winml_cat.jpg", Stretch, Bilinear, true, jpegExactDiff, jpegExactMean},
		{"wolves_stretch_bilinear", "ortex_wolves.jpg", Stretch, Bilinear, true, jpegExactDiff, jpegExactMean},
		{"wolves_crop_bilinear", "ortex_wolves.jpg", ShorterCrop, Bilinear, true, jpegExactDiff, jpegExactMean},
		{"cat_stretch_bilinear", "winml_cat.jpg", Stretch, Bilinear, false, jpegScaledDiff, jpegScaledMean},
		{"wolves_stretch_bilinear", "ortex_wolves.jpg", Stretch, Bilinear, false, jpegScaledDiff, jpegScaledMean},
		{"wolves_crop_bilinear", "ortex_wolves.jpg", ShorterCrop, Bilinear, false, jpegScaledDiff, jpegScaledMean},
	} {
		name := tt.golden
		if tt.fullDecode {
			name += "/full-decode"
		}
		t.Run(name, func(t *testing.T) {
			w, h, want, err := readPPM(filepath.Join("testdata", tt.golden+".ppm"))
			if err != nil {
				t.Fatal(err)
			}
			// UINT8 NHWC RGB is the resized image itself.
			c := Config{Width: w, Height: h, Resize: tt.resize, Interpolation: tt.interp,
				Layout: NHWC, DType: tensor.Uint8, fullDecode: tt.fullDecode}
			got := make([]byte, c.ImageBytes())
			if err := c.Preprocess(got, readPhoto(t, tt.photo)); err != nil {
				t.Fatal(err)
			}
			maxDiff, sum := 0, 0
			for i := range got {
				d := int(got[i]) - int(want[i])
				d = max(d, -d)
				maxDiff, sum = max(maxDiff, d), sum+d
			}
			mean := float64(sum) / float64(len(got))
			t.Logf("max |diff| %d, mean %.3f", maxDiff, mean)
			if maxDiff > tt.maxDiff || mean > tt.meanDiff {
				t.Errorf("differs from Pillow by up to %d levels (mean %.3f), want ≤ %d (mean ≤ %.3f)",
					maxDiff, mean, tt.maxDiff, tt.meanDiff)
			}
		})
	}
}
