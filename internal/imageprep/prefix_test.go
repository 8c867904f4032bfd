package imageprep

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// TestInspectPrefixRefusesBombs: a 64 KiB prefix of each image bomb is
// refused with the error the whole image gets.
func TestInspectPrefixRefusesBombs(t *testing.T) {
	c := Config{Width: 224, Height: 224, MaxPixels: 40_000_000}
	cases := []struct {
		name string
		img  []byte
		want error
	}{
		{"JPEG scan bomb", hostile.ScanBombJPEG(8000), ErrTooCostly},
		{"16-bit PNG bomb", hostile.PNGBomb(6000, 6000), ErrTooCostly},
		{"PNG over max_pixels", hostile.PNGBomb8(8000, 8000), ErrTooManyPixels},
		{"GIF", append([]byte("GIF89a"), make([]byte, 100<<10)...), ErrUnsupportedFormat},
	}
	for _, tc := range cases {
		_, err := c.InspectPrefix(tc.img[:min(len(tc.img), 64<<10)])
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: 64 KiB prefix: err = %v, want %v", tc.name, err, tc.want)
		}
		if _, whole := c.Inspect(tc.img); !errors.Is(whole, tc.want) {
			t.Errorf("%s: whole image: err = %v, want %v", tc.name, whole, tc.want)
		}
	}
}

// TestInspectPrefixPassesEveryPrefixOfAPhoto: no prefix of an image the
// whole Inspect accepts is refused.
func TestInspectPrefixPassesEveryPrefixOfAPhoto(t *testing.T) {
	c := Config{Width: 224, Height: 224, MaxPixels: 40_000_000}
	imgs := [][]byte{hostile.ScanBombJPEGSized(16, 20)}
	for _, name := range photos(t) {
		b, err := os.ReadFile(filepath.Join(sharedTestdata(t), "images", name))
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, b)
	}
	for _, img := range imgs {
		if _, err := c.Inspect(img); err != nil {
			t.Fatalf("Inspect refuses the whole image: %v", err)
		}
		step := max(1, len(img)/3000)
		for k := 0; k <= len(img); k += step {
			if _, err := c.InspectPrefix(img[:k]); err != nil {
				t.Fatalf("the %d-byte prefix of a %d-byte image that Inspect accepts is refused: %v", k, len(img), err)
			}
		}
	}
}
