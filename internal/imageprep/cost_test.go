package imageprep

import (
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// TestTallThinPNGCostsItsResizeRows: a 1-pixel-wide PNG as tall as
// max_pixels allows is a few hundred KB and 4 bytes a pixel decoded, but
// resizing it to 224 wide takes a 672-byte row per source row: Inspect
// must say so from the header, before anything is decoded.
func TestTallThinPNGCostsItsResizeRows(t *testing.T) {
	c := &Config{Width: 224, Height: 224, MaxPixels: 40_000_000}
	const rows = 4_000_000
	bomb := hostile.PNGBomb8(1, rows)
	h, err := c.Inspect(bomb)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(rows) * 224 * 3; h.DecodeBytes < want {
		t.Errorf("DecodeBytes = %d for a 1×%d PNG (%d bytes sent), want at least its %d bytes of resize rows", h.DecodeBytes, rows, len(bomb), want)
	}
	c.Interpolation = Nearest
	if h, _ := c.Inspect(bomb); h.DecodeBytes > int64(rows)*6 {
		t.Errorf("nearest keeps no resize rows, yet DecodeBytes = %d", h.DecodeBytes)
	}
}

// TestDecodeBytes checks the estimate against what Preprocess allocates,
// buffer by buffer, for the kinds of images it tells apart.
func TestDecodeBytes(t *testing.T) {
	c := &Config{Width: 224, Height: 224, MaxPixels: 40_000_000}
	rows := func(h int64) int64 { return max(h, 224) * 224 * 3 }
	bomb8 := hostile.PNGBomb8(6000, 6000)
	bomb16 := hostile.PNGBomb(3000, 3000)
	tests := []struct {
		name string
		img  []byte
		want int64
	}{
		// Fast path: inflated rows and the IDAT copy; image/png's NRGBA
		// is 4 bytes a pixel, less.
		{"8-bit RGBA 6000×6000", bomb8, 6000*(6000*4+1) + int64(len(bomb8)) + rows(6000)},
		// image/png: 8 bytes a pixel, then an RGB copy.
		{"16-bit RGBA 3000×3000", bomb16, 3000*3000*(8+3) + rows(3000)},
	}
	if !cgoEnabled {
		tests[0].want = 6000*6000*4 + rows(6000)
	}
	for _, tt := range tests {
		h, err := c.Inspect(tt.img)
		if err != nil || h.DecodeBytes != tt.want {
			t.Errorf("%s: DecodeBytes = %d (%v), want %d", tt.name, h.DecodeBytes, err, tt.want)
		}
	}
}

// TestLargeScratchIsUnmapped: a buffer above maxPooledBytes is a mapping
// that release gives back; a small one stays for the next call.
func TestLargeScratchIsUnmapped(t *testing.T) {
	var b buf
	big := b.grow(maxPooledBytes + 1)
	big[len(big)-1] = 1 // the mapping is writable to its end
	if !b.mapped {
		t.Fatal("a buffer above maxPooledBytes is not a mapping")
	}
	b.release()
	if b.b != nil || b.mapped {
		t.Fatalf("after release: %d bytes, mapped %v", cap(b.b), b.mapped)
	}
	small := b.grow(4096)
	b.release()
	if b.mapped || cap(b.b) != cap(small) {
		t.Errorf("a small buffer was not kept: cap %d, mapped %v", cap(b.b), b.mapped)
	}
	// A PNG larger than the pool keeps its buffers only for the call.
	s := getScratch()
	c := &Config{Width: 8, Height: 8, MaxPixels: 40_000_000}
	if _, err := c.decode(hostile.PNGBomb8(3000, 3000), s); err != nil {
		t.Fatal(err)
	}
	if cgoEnabled && !s.rgb.mapped { // image/png's own image otherwise
		t.Errorf("36 MB of decoded rows are not a mapping")
	}
	putScratch(s)
	if s.rgb.b != nil || s.tmp.mapped {
		t.Errorf("putScratch kept %d bytes of rows, tmp mapped %v", cap(s.rgb.b), s.tmp.mapped)
	}
}
