package imageprep

import (
	"bytes"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestUnchangedAxisIsCopied checks the axes a resize leaves alone: their
// samples are the source's, as Pillow's resize copies them, whether both
// axes keep their size or one does and the other is cropped.
func TestUnchangedAxisIsCopied(t *testing.T) {
	src := gradient(16, 20)
	for _, tt := range []struct {
		name   string
		w, h   int
		resize string
		oy     int // first source row kept
	}{
		{"same size", 16, 20, Stretch, 0},
		{"crop rows", 16, 16, ShorterCrop, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Width: tt.w, Height: tt.h, Resize: tt.resize, Layout: NHWC, DType: tensor.Uint8}
			got := make([]byte, c.ImageBytes())
			if err := c.Preprocess(got, encodePNG(t, src)); err != nil {
				t.Fatal(err)
			}
			for y := range tt.h {
				var want []byte
				for x := range tt.w {
					p := src.Pix[src.PixOffset(x, y+tt.oy):]
					want = append(want, p[0], p[1], p[2])
				}
				if row := got[y*tt.w*3 : (y+1)*tt.w*3]; !bytes.Equal(row, want) {
					t.Fatalf("row %d = % x, want % x", y, row, want)
				}
			}
		})
	}
}
