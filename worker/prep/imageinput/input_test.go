package imageinput

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/shm"
	"github.com/supervisor-dev/supervisor/worker"
)

func imageModel(dtype tensor.DType, shape ...int64) *tensor.Metadata {
	return &tensor.Metadata{Name: "m", Inputs: []tensor.Spec{{Name: "x", DType: dtype, Shape: shape}},
		Outputs: []tensor.Spec{{Name: "y", DType: tensor.FP32, Shape: []int64{-1, 10}}}}
}

func TestNewImageInputFollowsTheModel(t *testing.T) {
	im, err := New(imageModel(tensor.FP16, 1, 3, 224, 200), &worker.ImageInput{ChannelOrder: "BGR", MaxImages: 4})
	if err != nil {
		t.Fatal(err)
	}
	if im.cfg.Width != 200 || im.cfg.Height != 224 || im.cfg.DType != tensor.FP16 || im.MaxImages != 4 {
		t.Errorf("cfg = %+v", im.cfg)
	}
	if s := im.ClientSpec(); s.Name != "x" || s.DType != tensor.Bytes || tensor.FormatShape(s.Shape) != "[-1]" {
		t.Errorf("clientSpec = %+v", s)
	}
	// A fixed batch of 1 runs images one by one; a dynamic one all at once.
	if im.chunk(5) != 1 {
		t.Errorf("chunk(5) with batch 1 = %d", im.chunk(5))
	}
	dyn, err := New(imageModel(tensor.FP32, -1, 64, 32, 3), &worker.ImageInput{Layout: "NHWC"})
	if err != nil {
		t.Fatal(err)
	}
	if dyn.cfg.Width != 32 || dyn.cfg.Height != 64 || dyn.chunk(5) != 5 {
		t.Errorf("NHWC: cfg %+v, chunk %d", dyn.cfg, dyn.chunk(5))
	}
	fixed4, _ := New(imageModel(tensor.FP32, 4, 3, 8, 8), &worker.ImageInput{})
	if fixed4.chunk(4) != 4 || fixed4.chunk(3) != 0 {
		t.Errorf("fixed batch 4: chunk(4) %d, chunk(3) %d", fixed4.chunk(4), fixed4.chunk(3))
	}
}

func TestNewImageInputMisfits(t *testing.T) {
	two := imageModel(tensor.FP32, 1, 3, 8, 8)
	two.Inputs = append(two.Inputs, tensor.Spec{Name: "z", DType: tensor.FP32, Shape: []int64{1}})
	for _, tt := range []struct {
		name string
		md   *tensor.Metadata
		cfg  worker.ImageInput
		want string
	}{
		{"two inputs", two, worker.ImageInput{}, "fills the model's only input, but it has 2 inputs (x, z)"},
		{"rank 2", imageModel(tensor.FP32, 1, 16), worker.ImageInput{}, "must have 4 dimensions"},
		{"channels last", imageModel(tensor.FP32, 1, 8, 8, 3), worker.ImageInput{}, "has 8 channels where layout NCHW puts them"},
		{"dynamic size", imageModel(tensor.FP32, -1, 3, -1, -1), worker.ImageInput{}, "the model's width is dynamic: set preprocess.width"},
		{"size mismatch", imageModel(tensor.FP32, 1, 3, 8, 8), worker.ImageInput{Height: 9}, "preprocess.height is 9, the model's is 8"},
		{"dtype mismatch", imageModel(tensor.FP16, 1, 3, 8, 8), worker.ImageInput{DType: "FP32"}, "preprocess.dtype is FP32, the model wants FP16"},
		{"int input", imageModel(tensor.Int64, 1, 3, 8, 8), worker.ImageInput{}, "DType INT64 is not one of FP32, FP16, UINT8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.md, &tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestImageTensors(t *testing.T) {
	im, err := New(imageModel(tensor.FP32, -1, 3, 4, 4), &worker.ImageInput{MaxImages: 3, MaxPixels: 100})
	if err != nil {
		t.Fatal(err)
	}
	ok := encodePNG(t, 6, 5)
	ts, err := im.Tensors([][]byte{ok, ok}, &counting{})
	if err != nil || len(ts) != 1 || tensor.FormatShape(ts[0].Shape) != "[2,3,4,4]" || ts[0].Check() != nil {
		t.Fatalf("tensors = %+v, %v", ts, err)
	}
	for _, tt := range []struct {
		name   string
		images [][]byte
		want   string
	}{
		{"none", nil, `input "x" has no images`},
		{"too many", [][]byte{ok, ok, ok, ok}, "has 4 images, more than this model's max_images (3)"},
		{"too big", [][]byte{ok, encodePNG(t, 20, 20)}, "image has too many pixels: PNG of 20×20 = 400 pixels, over the limit of 100"},
		{"garbage", [][]byte{[]byte("hello")}, "unsupported image format"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := im.Tensors(tt.images, &counting{})
			var ie *Error
			if !errors.As(err, &ie) || !strings.Contains(ie.msg, tt.want) {
				t.Errorf("err = %v, want an imageError containing %q", err, tt.want)
			}
		})
	}
}

func TestUnbase64(t *testing.T) {
	raw := encodePNG(t, 2, 2)
	for _, tt := range []struct {
		name string
		in   []byte
		want []byte
		err  bool
	}{
		{"raw png", raw, raw, false},
		{"padded", []byte(base64.StdEncoding.EncodeToString(raw)), raw, false},
		{"unpadded", []byte(base64.RawStdEncoding.EncodeToString(raw)), raw, false},
		{"wrapped lines", []byte(base64.StdEncoding.EncodeToString(raw)[:8] + "\r\n" + base64.StdEncoding.EncodeToString(raw)[8:]), raw, false},
		{"gif stays raw", []byte("GIF89a\x01\x00"), []byte("GIF89a\x01\x00"), false},
		{"bad padding", []byte("QUJD="), nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unbase64(tt.in)
			if (err != nil) != tt.err || (!tt.err && !bytes.Equal(got, tt.want)) {
				t.Errorf("unbase64 = %.20q, %v; want %.20q, error %v", got, err, tt.want, tt.err)
			}
		})
	}
}

// FuzzImageElements feeds arbitrary request elements through what an
// image request's BYTES elements go through: base64 detection, then
// decoding into the tensor. Nothing may panic, and every refusal of an
// image must be an imageError (a 400), never an internal error.
func FuzzImageElements(f *testing.F) {
	f.Add(encodePNG(f, 3, 2))
	f.Add([]byte(base64.StdEncoding.EncodeToString(encodePNG(f, 3, 2))))
	f.Add([]byte("\xff\xd8\xff\xe0\x00\x10JFIF"))
	f.Add([]byte("/9j/4AAQSkZJRgABAQ"))
	f.Add([]byte("iVBORw0KGgoAAAANSUhEUgAAAAAAAAAA"))
	f.Add([]byte{})
	im, err := New(imageModel(tensor.FP16, -1, 3, 5, 7), &worker.ImageInput{MaxPixels: 1 << 16, MaxImages: 2})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, e []byte) {
		img, err := Unbase64(e)
		if err != nil {
			return // answered as a 400 naming the element
		}
		if _, err := im.Tensors([][]byte{img}, &counting{}); err != nil {
			var ie *Error
			if !errors.As(err, &ie) {
				t.Fatalf("tensors(% x...) = %v, want nil or an imageError", e[:min(len(e), 16)], err)
			}
		}
	})
}

func encodePNG(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 37)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestRequestPixelBudget: images are inspected before any is decoded, so
// a request over max_request_pixels, or with one image refused from its
// header, costs no decoding.
func TestRequestPixelBudget(t *testing.T) {
	im, err := New(imageModel(tensor.FP32, -1, 3, 4, 4), &worker.ImageInput{MaxImages: 8, MaxPixels: 100, MaxRequestPixels: 150})
	if err != nil {
		t.Fatal(err)
	}
	ok := encodePNG(t, 6, 5) // 30 pixels
	for _, tt := range []struct {
		name   string
		images [][]byte
		want   string
	}{
		{"over the budget", [][]byte{ok, ok, ok, ok, ok, ok}, `input "x": image 5 of 6 (PNG 6×5) brings the request to 180 pixels, over this model's max_request_pixels (150)`},
		{"scan bomb last", [][]byte{ok, ok, hostile.ScanBombJPEGSized(8, 100)}, "image too costly to decode: JPEG of 8×8 has 100 scans"},
		{"PNG bomb last", [][]byte{ok, hostile.PNGBomb(10, 10)}, "image too costly to decode: PNG of 10×10 at 16 bits per sample takes 800 bytes to decode, over the limit of 400"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &counting{}
			_, err := im.Tensors(tt.images, c)
			var ie *Error
			if !errors.As(err, &ie) || !strings.Contains(ie.msg, tt.want) || c.checks != 0 {
				t.Errorf("err = %v after %d images decoded, want an imageError containing %q before any", err, c.checks, tt.want)
			}
		})
	}
	// Within the budget all are decoded.
	if ts, err := im.Tensors([][]byte{ok, ok, ok, ok, ok}, &counting{}); err != nil || len(ts) != 1 {
		t.Fatalf("150 pixels: %v", err)
	}
	// The default budget is four images of max_pixels.
	if def, _ := New(imageModel(tensor.FP32, -1, 3, 4, 4), &worker.ImageInput{MaxPixels: 100}); def.maxRequestPixels != 400 {
		t.Errorf("default max_request_pixels = %d, want 400", def.maxRequestPixels)
	}
}

// counting is a Stopper that never stops and counts the checks: one per
// image, before it is decoded.
type counting struct{ checks int }

func (c *counting) Check() error     { c.checks++; return nil }
func (c *counting) AtWork() shm.Work { return shm.Work{} }
