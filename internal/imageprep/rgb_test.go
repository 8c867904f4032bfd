package imageprep

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// oracleRGB is the per-pixel conversion rgbPixels replaced (At, then the
// high byte of each non-premultiplied sample: alpha is dropped, not
// applied): the reference.
func oracleRGB(img image.Image) []byte {
	b := img.Bounds()
	out := make([]byte, 0, b.Dx()*b.Dy()*3)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			switch c := img.At(x, y).(type) {
			case color.NRGBA:
				out = append(out, c.R, c.G, c.B)
			case color.NRGBA64:
				out = append(out, byte(c.R>>8), byte(c.G>>8), byte(c.B>>8))
			default: // opaque: premultiplied or not, the same
				n := color.NRGBA64Model.Convert(c).(color.NRGBA64)
				out = append(out, byte(n.R>>8), byte(n.G>>8), byte(n.B>>8))
			}
		}
	}
	return out
}

// rgbOf packs p's pixels as RGB rows.
func rgbOf(p pixels) []byte {
	out := make([]byte, 0, p.w*p.h*3)
	for y := range p.h {
		row := p.pix[y*p.stride:]
		for x := range p.w {
			out = append(out, row[x*p.bpp:x*p.bpp+3]...)
		}
	}
	return out
}

// TestPNGConversionsMatchThePerPixelOracle decodes every PNG of the
// PngSuite Go ships (grey 1 to 16 bits, palettes, RGB and RGBA in 8 and
// 16 bits, transparency) and of every colour model image/png writes, and
// compares the RGB with the per-pixel reference.
func TestPNGConversionsMatchThePerPixelOracle(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v (the PngSuite is read from the Go tree)", err)
	}
	files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(goroot)), "src", "image", "png", "testdata", "pngsuite", "*.png"))
	var cases []struct {
		name string
		data []byte
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			data []byte
		}{filepath.Base(f), data})
	}
	g := gradient(13, 7)
	for name, img := range map[string]image.Image{
		"gray16": convertTo(image.NewGray16(g.Bounds()), g), "rgba64": convertTo(image.NewRGBA64(g.Bounds()), g),
		"nrgba64": convertTo(image.NewNRGBA64(g.Bounds()), g), "gray": convertTo(image.NewGray(g.Bounds()), g),
	} {
		cases = append(cases, struct {
			name string
			data []byte
		}{name, encodePNG(t, img)})
	}
	if len(cases) < 10 {
		t.Fatalf("only %d PNGs to compare", len(cases))
	}
	c := &Config{Width: 8, Height: 8}
	types := map[string]bool{}
	for _, tc := range cases {
		want, err := png.Decode(bytes.NewReader(tc.data))
		if err != nil {
			continue // PngSuite's broken files: not this test's business
		}
		types[fmt.Sprintf("%T", want)] = true
		s := getScratch()
		p, err := c.decode(tc.data, s)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if got, ref := rgbOf(p), oracleRGB(want); !bytes.Equal(got, ref) {
			t.Errorf("%s (%T): RGB differs from the per-pixel reference", tc.name, want)
		}
		putScratch(s)
	}
	for _, typ := range []string{"*image.Gray", "*image.Gray16", "*image.RGBA64", "*image.NRGBA64", "*image.Paletted", "*image.NRGBA", "*image.RGBA"} {
		if !types[typ] {
			t.Errorf("no PNG decoded to %s", typ)
		}
	}
}

// convertTo draws src into dst pixel by pixel (colour model conversion).
func convertTo[T interface {
	image.Image
	Set(x, y int, c color.Color)
}](dst T, src image.Image) T {
	b := src.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			dst.Set(x, y, src.At(x, y))
		}
	}
	return dst
}
