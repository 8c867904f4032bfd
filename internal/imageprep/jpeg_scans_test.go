package imageprep

import (
	"bytes"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectAgreesWithTheDecodersOnPhotos: on every shared photo,
// Inspect passes and reads the size the standard decoders read, and the
// marker walk finds at least one scan per component of a JPEG.
func TestInspectAgreesWithTheDecodersOnPhotos(t *testing.T) {
	c := &Config{Width: 8, Height: 8}
	for _, name := range photos(t) {
		data, err := os.ReadFile(filepath.Join(sharedTestdata(t), "images", name))
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.Inspect(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		decodeConfig := png.DecodeConfig
		if strings.HasSuffix(name, ".jpg") {
			decodeConfig = jpeg.DecodeConfig
			info, _ := walkJPEG(data)
			if info.scans < 1 || info.busiestScans < 1 {
				t.Errorf("%s: %d scans", name, info.scans)
			}
			t.Logf("%s: %d×%d, %d components, %d scans", name, info.w, info.h, info.components, info.scans)
		}
		cfg, err := decodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != h.Width || cfg.Height != h.Height {
			t.Errorf("%s: Inspect says %d×%d, the standard decoder %d×%d (%v)", name, h.Width, h.Height, cfg.Width, cfg.Height, err)
		}
	}
}
