package hostile

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// sosCount counts SOS markers: entropy-coded data never holds 0xff 0xda
// (a 0xff there is stuffed with 0x00) and neither do the bomb's tables.
func sosCount(b []byte) int { return bytes.Count(b, []byte{0xff, 0xda}) }

func TestScanBombJPEGIsAProgressiveJPEGOfThatManyScans(t *testing.T) {
	for _, scans := range []int{1, 20, 8000} {
		b := ScanBombJPEG(scans)
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width != 4096 || cfg.Height != 4096 || cfg.ColorModel != color.GrayModel {
			t.Fatalf("ScanBombJPEG(%d): DecodeConfig = %+v, %v; want a 4096×4096 grey JPEG", scans, cfg, err)
		}
		if !bytes.Contains(b, []byte{0xff, 0xc2}) || sosCount(b) != scans {
			t.Errorf("ScanBombJPEG(%d): SOF2 %v, %d SOS markers", scans, bytes.Contains(b, []byte{0xff, 0xc2}), sosCount(b))
		}
	}
	if n := len(ScanBombJPEG(8000)); n > 400<<10 {
		t.Errorf("ScanBombJPEG(8000) is %d bytes; want a few hundred KB", n)
	}
}

// TestScanBombJPEGDecodes decodes small bombs in full with image/jpeg:
// every pixel is the grey of an all-zero block, through the legal
// progression (883 scans) and past it.
func TestScanBombJPEGDecodes(t *testing.T) {
	for _, scans := range []int{1, 883, 900} {
		b := ScanBombJPEGSized(20, scans)
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("ScanBombJPEGSized(20, %d): %v", scans, err)
		}
		g, ok := img.(*image.Gray)
		if !ok || g.Bounds().Dx() != 20 || g.Bounds().Dy() != 20 || sosCount(b) != scans {
			t.Fatalf("ScanBombJPEGSized(20, %d) = %T %v with %d scans", scans, img, img.Bounds(), sosCount(b))
		}
		for i, v := range g.Pix {
			if v != 128 {
				t.Fatalf("ScanBombJPEGSized(20, %d): pixel %d is %d, want 128", scans, i, v)
			}
		}
	}
}

func TestPNGBombIsA16BitRGBAPNG(t *testing.T) {
	b := PNGBomb(6000, 6000)
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 6000 || cfg.Height != 6000 || cfg.ColorModel != color.NRGBA64Model {
		t.Fatalf("PNGBomb(6000, 6000): DecodeConfig = %+v, %v; want 6000×6000 NRGBA64", cfg, err)
	}
	if len(b) > 300<<10 {
		t.Errorf("PNGBomb(6000, 6000) is %d bytes; want under 300 KB", len(b))
	}
	// Its IDAT inflates to exactly the raw size, checksum included (at
	// 2000×2000, the same stream 9 times shorter: the race detector makes
	// inflating 288 MB slow).
	mid := PNGBomb(2000, 2000)
	idat := mid[8+25+8 : len(mid)-12-4]
	if string(mid[8+25+4:8+25+8]) != "IDAT" || int(binary.BigEndian.Uint32(mid[8+25:])) != len(idat) {
		t.Fatal("PNGBomb: the second chunk is not the IDAT")
	}
	zr, err := zlib.NewReader(bytes.NewReader(idat))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if want := int64(2000 * (1 + 8*2000)); err != nil || n != want {
		t.Errorf("PNGBomb(2000, 2000) inflates to %d bytes (%v), want %d", n, err, want)
	}
	for _, s := range [][2]int{{1, 1}, {37, 5}, {300, 200}} {
		img, err := png.Decode(bytes.NewReader(PNGBomb(s[0], s[1])))
		m, ok := img.(*image.NRGBA64)
		if err != nil || !ok || m.Bounds() != image.Rect(0, 0, s[0], s[1]) || bytes.Count(m.Pix, []byte{0}) != len(m.Pix) {
			t.Errorf("PNGBomb(%d, %d) decodes to %T %v, %v; want all-zero NRGBA64", s[0], s[1], img, img.Bounds(), err)
		}
	}
}

func TestPNGBomb8IsAn8BitRGBAPNG(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(PNGBomb8(301, 7)))
	m, ok := img.(*image.NRGBA)
	if err != nil || !ok || m.Bounds() != image.Rect(0, 0, 301, 7) || bytes.Count(m.Pix, []byte{0}) != len(m.Pix) {
		t.Fatalf("PNGBomb8(301, 7) decodes to %T, %v; want an all-zero NRGBA", img, err)
	}
	if n := len(PNGBomb8(6000, 6000)); n > 150<<10 {
		t.Errorf("PNGBomb8(6000, 6000) is %d bytes", n)
	}
}

func TestBytesFloodJSONIsAV2Request(t *testing.T) {
	for _, n := range []int{0, 1, 1000} {
		b := BytesFloodJSON(`in"put`, n)
		if !json.Valid(b) {
			t.Fatalf("BytesFloodJSON(%d) is not JSON: %.80s", n, b)
		}
		req, err := v2.DecodeInferRequest(b, -1)
		if err != nil {
			t.Fatalf("BytesFloodJSON(%d): %v", n, err)
		}
		in := req.Inputs[0]
		elems, err := tensor.BytesElements(in.Data, int64(n))
		if len(req.Inputs) != 1 || in.Name != `in"put` || in.DType != tensor.Bytes || tensor.FormatShape(in.Shape) != "["+itoa(n)+"]" || err != nil || len(elems) != n {
			t.Fatalf("BytesFloodJSON(%d) decodes to %+v (%v)", n, in, err)
		}
		for i, e := range elems {
			if len(e) != 0 {
				t.Fatalf("element %d is %q", i, e)
			}
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBytesFloodBinaryIsAV2BinaryRequest(t *testing.T) {
	for _, n := range []int{0, 1, 1000} {
		b, hl := BytesFloodBinary("data_0", n)
		if len(b) != hl+4*n || !json.Valid(b[:hl]) {
			t.Fatalf("BytesFloodBinary(%d): %d bytes, header %d: %.120s", n, len(b), hl, b)
		}
		req, err := v2.DecodeInferRequest(b, hl)
		if err != nil {
			t.Fatalf("BytesFloodBinary(%d): %v", n, err)
		}
		in := req.Inputs[0]
		elems, err := tensor.BytesElements(in.Data, int64(n))
		if len(req.Inputs) != 1 || in.DType != tensor.Bytes || tensor.FormatShape(in.Shape) != "["+itoa(n)+"]" || err != nil || len(elems) != n {
			t.Fatalf("BytesFloodBinary(%d) decodes to %+v (%v)", n, in, err)
		}
		for i, e := range elems {
			if len(e) != 0 {
				t.Fatalf("element %d is %q", i, e)
			}
		}
	}
}

// TestCompressionBombsInflateToAV2Request: each bomb inflates, with the
// standard library, to exactly size bytes of valid JSON that is the
// request padded with whitespace, from at most a 500th of that.
func TestCompressionBombsInflateToAV2Request(t *testing.T) {
	req := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,1],"data":[1]}]}`)
	const size = 2 << 20
	for name, tc := range map[string]struct {
		body []byte
		open func(io.Reader) (io.Reader, error)
	}{
		"gzip":    {GzipBomb(req, size), func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		"deflate": {DeflateBomb(req, size), func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }},
	} {
		r, err := tc.open(bytes.NewReader(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || len(got) != size || !json.Valid(got) || !bytes.Equal(bytes.TrimSpace(got[1:]), req[1:]) {
			t.Errorf("%s: inflated to %d bytes (%v); want %d bytes of the request padded with spaces", name, len(got), err, size)
		}
		if len(tc.body) > size/500 {
			t.Errorf("%s: %d bytes on the wire for %d inflated; want at most a 500th", name, len(tc.body), size)
		}
	}
}
