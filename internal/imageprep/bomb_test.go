package imageprep

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

func squeeze() *Config { return &Config{Width: 224, Height: 224} }

// TestScanBombRefusedBeforeDecoding: 8000 empty scans (312 KB) kept a
// prep worker busy for 10 to 30 s. Inspect counts them from the markers
// and Preprocess refuses them before decoding anything.
func TestScanBombRefusedBeforeDecoding(t *testing.T) {
	c := squeeze()
	dst := make([]byte, c.ImageBytes())
	for _, scans := range []int{MaxScansPerComponent + 1, 500, 8000} {
		bomb := hostile.ScanBombJPEG(scans)
		_, err := c.Inspect(bomb)
		if !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "in "+itoa(scans)+" of them") {
			t.Errorf("Inspect(%d scans) = %v, want ErrTooCostly naming %d scans", scans, err, scans)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err = c.Preprocess(dst, bomb)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooCostly) {
			t.Errorf("Preprocess(%d scans) = %v, want ErrTooCostly", scans, err)
		}
		// Decoding would allocate the 16 MB of pixels at least.
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("Preprocess(%d scans) allocated %d bytes before refusing", scans, d)
		}
	}
}

// TestScansWithinTheLimitDecode: a JPEG of MaxScansPerComponent scans
// decodes, to the grey of all-zero blocks.
func TestScansWithinTheLimitDecode(t *testing.T) {
	c := &Config{Width: 8, Height: 8, DType: 0}
	dst := make([]byte, c.ImageBytes())
	bomb := hostile.ScanBombJPEGSized(256, MaxScansPerComponent)
	h, err := c.Inspect(bomb)
	// Decoded at 1/8 with cgo (32×32 RGB), but its 32 scans keep all
	// 256×256 coefficients of its one component; then a row of 8 pixels
	// for each decoded row, for the resize.
	sh := c.jpegScale(256, 256).scaled(256)
	want := Header{Format: "JPEG", Width: 256, Height: 256, DecodeBytes: int64(sh*sh*3) + jpegDecoderBytes(256*256, 32) + int64(sh*8*3)}
	if err != nil || h != want {
		t.Fatalf("Inspect = %+v, %v", h, err)
	}
	if err := c.Preprocess(dst, bomb); err != nil {
		t.Fatalf("Preprocess(%d scans) = %v", MaxScansPerComponent, err)
	}
	for i := 0; i < len(dst); i += 4 {
		if v := le32float(dst[i:]); v != 128 {
			t.Fatalf("value %d is %v, want 128", i/4, v)
		}
	}
}

// TestPNGBombRefusedBeforeDecoding: a 290 KB 16-bit RGBA PNG of
// 6000×6000 cost 2 s and 320 MB through image/png. It needs 288 MB to
// decode, over the 160 MB the default max_pixels allows an image: refused
// from its header.
func TestPNGBombRefusedBeforeDecoding(t *testing.T) {
	c := squeeze()
	dst := make([]byte, c.ImageBytes())
	bomb := hostile.PNGBomb(6000, 6000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := c.Preprocess(dst, bomb)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "takes 288000000 bytes to decode, over the limit of 160000000") {
		t.Errorf("Preprocess(PNG bomb) = %v, want ErrTooCostly with the sizes", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("Preprocess(PNG bomb) allocated %d bytes before refusing", d)
	}
	// Within the limit it decodes, in what image/png and the RGB copy
	// take: 8 + 3 bytes a pixel, bounded by 4×MaxPixels + 3×pixels.
	c.MaxPixels = 2 * 1000 * 1000
	small := hostile.PNGBomb(1000, 1000)
	runtime.ReadMemStats(&before)
	err = c.Preprocess(dst, small)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Preprocess(1000×1000 16-bit) = %v", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 4*2e6+3*1e6+1<<20 {
		t.Errorf("Preprocess(1000×1000 16-bit) allocated %d bytes", d)
	}
}

func TestPNGCostLimits(t *testing.T) {
	c := &Config{Width: 8, Height: 8, MaxPixels: 1000}
	for _, tt := range []struct {
		depth, colour, interlace byte
		pixels                   int64
		ok                       bool
	}{
		{8, 6, 0, 1000, true},  // 8-bit RGBA: up to MaxPixels
		{8, 0, 0, 1000, true},  // 8-bit grey
		{16, 6, 0, 500, true},  // 16-bit: half
		{16, 6, 0, 501, false}, //
		{16, 0, 0, 501, false}, // 16-bit grey may become NRGBA64 (tRNS)
		{8, 2, 1, 500, true},   // interlaced: half
		{8, 2, 1, 501, false},  //
		{16, 2, 1, 250, true},  // both: a quarter
		{16, 2, 1, 251, false},
	} {
		h := pngIHDR{Header: Header{Format: "PNG", Width: int(tt.pixels), Height: 1}, depth: tt.depth, colour: tt.colour, interlace: tt.interlace}
		if err := c.checkPNGCost(h); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrTooCostly)) {
			t.Errorf("%+v: checkPNGCost = %v, want ok %v", tt, err, tt.ok)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func le32float(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
