package imageprep

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// sharedTestdata returns the shared test data directory, ../shared/testdata
// from the repository root, skipping the test when it is absent.
func sharedTestdata(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "testdata")
	if _, err := os.Stat(filepath.Join(dir, "images")); err != nil {
		abs, _ := filepath.Abs(dir)
		tb.Skipf("shared test data not found at %q (clone it next to the repository): %v", abs, err)
	}
	return dir
}

// photos lists the shared photos by file name.
func photos(tb testing.TB) []string {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(sharedTestdata(tb), "images", "*.*g"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no photos in the shared test data: %v", err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

func readPhoto(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(sharedTestdata(tb), "images", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// readPPM reads a binary PPM (P6, maxval 255) as written by Pillow.
func readPPM(path string) (w, h int, pix []byte, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, nil, err
	}
	r := bytes.NewReader(b)
	var maxval int
	if _, err := fmt.Fscanf(r, "P6\n%d %d\n%d\n", &w, &h, &maxval); err != nil || maxval != 255 {
		return 0, 0, nil, fmt.Errorf("%q is not an 8-bit binary PPM: %v", path, err)
	}
	pix = b[len(b)-r.Len():]
	if len(pix) != w*h*3 {
		return 0, 0, nil, fmt.Errorf("%q: %d bytes of pixels for %d×%d", path, len(pix), w, h)
	}
	return w, h, pix, nil
}

// gradient is a small test image whose every pixel differs.
func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8((x + y) * 7), 255})
		}
	}
	return img
}

func encodePNG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// isImageError reports whether err is one of the errors Preprocess
// promises for bad images.
func isImageError(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupportedFormat) || errors.Is(err, ErrTooManyPixels) ||
		errors.Is(err, ErrTooCostly)
}
