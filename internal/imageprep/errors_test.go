package imageprep

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color/palette"
	"image/gif"
	"testing"
)

// pngHeader is a PNG signature and an IHDR chunk (8-bit RGB) declaring
// w×h, with a valid CRC, and no image data.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	b := []byte("\x89PNG\r\n\x1a\n")
	b = binary.BigEndian.AppendUint32(b, 13)
	b = append(b, ihdr...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(ihdr))
}

// hugeJPEG is a valid small JPEG whose SOF0 header is patched to declare
// 60000×60000 pixels.
func hugeJPEG(tb testing.TB) []byte {
	b := encodeJPEG(tb, gradient(16, 16))
	i := bytes.Index(b, []byte{0xff, 0xc0})
	if i < 0 {
		tb.Fatal("image/jpeg wrote no SOF0 marker")
	}
	// marker(2) length(2) precision(1) height(2) width(2)
	binary.BigEndian.PutUint16(b[i+5:], 60000)
	binary.BigEndian.PutUint16(b[i+7:], 60000)
	return b
}

func truncated(b []byte) []byte { return b[:len(b)/2] }

func gifImage(tb testing.TB) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, 4, 4), palette.Plan9), nil); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func TestPreprocessErrors(t *testing.T) {
	jpg := encodeJPEG(t, gradient(64, 48))
	for _, tt := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrUnsupportedFormat},
		{"text", []byte("hello, world"), ErrUnsupportedFormat},
		{"GIF", gifImage(t), ErrUnsupportedFormat},
		{"WebP", []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), ErrUnsupportedFormat},
		{"JPEG magic then garbage", append([]byte{0xff, 0xd8, 0xff}, bytes.Repeat([]byte{0x42}, 100)...), ErrCorrupt},
		{"PNG magic then garbage", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0x42}, 100)...), ErrCorrupt},
		{"truncated JPEG", truncated(jpg), ErrCorrupt},
		{"JPEG header only", jpg[:200], ErrCorrupt},
		{"truncated PNG", truncated(encodePNG(t, gradient(64, 48))), ErrCorrupt},
		{"zero-size PNG", pngHeader(0, 0), ErrCorrupt},
		{"PNG header claiming 100000×100000", pngHeader(100000, 100000), ErrTooManyPixels},
		{"JPEG header claiming 60000×60000", hugeJPEG(t), ErrTooManyPixels},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Width: 32, Height: 32}
			err := c.Preprocess(make([]byte, c.ImageBytes()), tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Preprocess = %v, want %v", err, tt.want)
			}
			t.Log(err)
		})
	}
}

func TestMaxPixels(t *testing.T) {
	for _, data := range [][]byte{encodePNG(t, gradient(100, 100)), encodeJPEG(t, gradient(100, 100))} {
		c := Config{Width: 8, Height: 8, MaxPixels: 100*100 - 1}
		dst := make([]byte, c.ImageBytes())
		if err := c.Preprocess(dst, data); !errors.Is(err, ErrTooManyPixels) {
			t.Errorf("%s over MaxPixels: Preprocess = %v, want ErrTooManyPixels", sniff(data), err)
		}
		c.MaxPixels = 100 * 100
		if err := c.Preprocess(dst, data); err != nil {
			t.Errorf("%s at MaxPixels: %v", sniff(data), err)
		}
	}
}

func TestPreprocessRejectsWrongDst(t *testing.T) {
	c := Config{Width: 8, Height: 8, DType: 0}
	err := c.Preprocess(make([]byte, c.ImageBytes()-1), encodePNG(t, gradient(8, 8)))
	if err == nil || isImageError(err) {
		t.Fatalf("Preprocess into a short dst = %v, want a non-image error", err)
	}
}
