//go:build cgo

package imageprep

import (
	"errors"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// TestLibjpegLimitsScans checks the bound behind Inspect's count:
// decodeJPEG alone (no Inspect) decodes 500 scans and refuses 501, with
// TJFLAG_LIMITSCANS. The two files differ only in one scan.
func TestLibjpegLimitsScans(t *testing.T) {
	c := &Config{Width: 8, Height: 8}
	s := getScratch()
	defer putScratch(s)
	if _, err := c.decodeJPEG(hostile.ScanBombJPEGSized(16, 500), s); err != nil {
		t.Fatalf("500 scans: %v", err)
	}
	if _, err := c.decodeJPEG(hostile.ScanBombJPEGSized(16, 501), s); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("501 scans: %v, want ErrCorrupt from libjpeg-turbo's scan limit", err)
	}
}
