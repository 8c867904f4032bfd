package imageprep

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// samplePNGs encodes RGB (opaque) and RGBA images of awkward sizes with Go's
// encoder, whose adaptive filtering uses every PNG filter type.
func samplePNGs(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range [][2]int{{1, 1}, {3, 7}, {64, 33}, {225, 224}} {
		for _, opaque := range []bool{true, false} {
			img := image.NewNRGBA(image.Rect(0, 0, size[0], size[1]))
			for i := range img.Pix {
				// Smooth ramps with noise, so that every filter wins somewhere.
				img.Pix[i] = byte(i/4%size[0]*3 + rng.IntN(8))
			}
			if opaque {
				for i := 3; i < len(img.Pix); i += 4 {
					img.Pix[i] = 255
				}
			}
			var b bytes.Buffer
			if err := png.Encode(&b, img); err != nil {
				t.Fatal(err)
			}
			out[filepath.Join("synthetic", string(rune('a'+size[0]%26)), map[bool]string{true: "rgb", false: "rgba"}[opaque])] = b.Bytes()
		}
	}
	if files, _ := filepath.Glob("../../../shared/testdata/images/*.png"); len(files) > 0 {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(f)] = b
		}
	}
	return out
}

// TestFastPNGMatchesImagePNG: the fast path decodes every sample to the
// same RGB as image/png (alpha ignored, as everywhere here).
func TestFastPNGMatchesImagePNG(t *testing.T) {
	fast := 0
	for name, data := range samplePNGs(t) {
		var s scratch
		p, ok := s.decodeFastPNG(data)
		if !ok {
			if !cgoEnabled {
				continue // no fast inflater in this build
			}
			t.Errorf("%s: the fast path refused an 8-bit RGB(A) PNG", name)
			continue
		}
		fast++
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		b := img.Bounds()
		if p.w != b.Dx() || p.h != b.Dy() {
			t.Fatalf("%s: %dx%d, want %dx%d", name, p.w, p.h, b.Dx(), b.Dy())
		}
		for y := range p.h {
			for x := range p.w {
				want := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				o := y*p.stride + x*p.bpp
				if got := p.pix[o : o+3]; got[0] != want.R || got[1] != want.G || got[2] != want.B {
					t.Fatalf("%s: pixel (%d,%d) = %v, want %v", name, x, y, got, want)
				}
			}
		}
	}
	if cgoEnabled && fast == 0 {
		t.Fatal("no sample went through the fast path")
	}
}

// FuzzFastPNG: whatever the bytes, the fast path never panics, and what it
// accepts decodes exactly as image/png does.
func FuzzFastPNG(f *testing.F) {
	for _, data := range samplePNGs(f) {
		if len(data) < 64<<10 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s scratch
		p, ok := s.decodeFastPNG(data)
		if !ok {
			return
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			return // image/png is stricter about ancillary chunks
		}
		b := img.Bounds()
		if p.w != b.Dx() || p.h != b.Dy() {
			t.Fatalf("%dx%d, image/png says %dx%d", p.w, p.h, b.Dx(), b.Dy())
		}
		for y := range p.h {
			for x := range p.w {
				want := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				o := y*p.stride + x*p.bpp
				if got := p.pix[o : o+3]; got[0] != want.R || got[1] != want.G || got[2] != want.B {
					t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, got, want)
				}
			}
		}
	})
}
