package imageprep

import (
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		c     Config
		field string // "" for valid
	}{
		{Config{Width: 224, Height: 224}, ""},
		{Config{Width: 224, Height: 224, Resize: ShorterCrop, Interpolation: Nearest, ChannelOrder: BGR,
			Layout: NHWC, DType: tensor.FP16, Scale: 1.0 / 255, Mean: [3]float32{0.5, 0.5, 0.5}}, ""},
		{Config{Width: 224, Height: 224, DType: tensor.Uint8, Std: [3]float32{1, 1, 1}}, ""},
		{Config{Width: 0, Height: 224}, "Width"},
		{Config{Width: 224, Height: 100000}, "Height"},
		{Config{Width: 8, Height: 8, Resize: "fit"}, "Resize"},
		{Config{Width: 8, Height: 8, Interpolation: "bicubic"}, "Interpolation"},
		{Config{Width: 8, Height: 8, ChannelOrder: "rgb"}, "ChannelOrder"},
		{Config{Width: 8, Height: 8, Layout: "CHW"}, "Layout"},
		{Config{Width: 8, Height: 8, DType: tensor.Int64}, "DType"},
		{Config{Width: 8, Height: 8, DType: tensor.Uint8, Scale: 2}, "UINT8"},
		{Config{Width: 8, Height: 8, Scale: -1}, "Scale"},
		{Config{Width: 8, Height: 8, Mean: [3]float32{0, float32(math.NaN()), 0}}, "Mean[1]"},
		{Config{Width: 8, Height: 8, Std: [3]float32{float32(math.Inf(1)), 1, 1}}, "Std[0]"},
		{Config{Width: 8, Height: 8, Std: [3]float32{1, 0, 1}}, "Std[1]"},
		{Config{Width: 8, Height: 8, Std: [3]float32{}}, ""},
		{Config{Width: 8, Height: 8, MaxPixels: -1}, "MaxPixels"},
	} {
		err := tt.c.Validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tt.c, err)
		case tt.field != "" && (err == nil || !strings.Contains(err.Error(), tt.field)):
			t.Errorf("%+v: %v, want an error naming %s", tt.c, err, tt.field)
		}
	}
}

func TestShapeAndBytes(t *testing.T) {
	c := Config{Width: 4, Height: 3}
	if got := c.Shape(2); !reflect.DeepEqual(got, []int64{2, 3, 3, 4}) {
		t.Errorf("NCHW Shape(2) = %v", got)
	}
	c.Layout = NHWC
	if got := c.Shape(1); !reflect.DeepEqual(got, []int64{1, 3, 4, 3}) {
		t.Errorf("NHWC Shape(1) = %v", got)
	}
	for dt, want := range map[tensor.DType]int{tensor.Invalid: 144, tensor.FP32: 144, tensor.FP16: 72, tensor.Uint8: 36} {
		c.DType = dt
		if got := c.ImageBytes(); got != want {
			t.Errorf("%s ImageBytes = %d, want %d", dt, got, want)
		}
	}
}

// TestLayoutsAndNormalisation checks every layout, order and dtype against
// the UINT8 NHWC RGB result, element by element.
func TestLayoutsAndNormalisation(t *testing.T) {
	const W, H = 7, 5
	img := encodePNG(t, gradient(23, 17))
	ref := Config{Width: W, Height: H, Layout: NHWC, DType: tensor.Uint8}
	rgb := make([]byte, ref.ImageBytes())
	if err := ref.Preprocess(rgb, img); err != nil {
		t.Fatal(err)
	}
	mean, std := [3]float32{0.1, 0.2, 0.3}, [3]float32{0.5, 0.25, 2}
	for _, layout := range []string{NCHW, NHWC} {
		for _, order := range []string{RGB, BGR} {
			for _, dt := range []tensor.DType{tensor.FP32, tensor.FP16} {
				c := Config{Width: W, Height: H, Layout: layout, ChannelOrder: order, DType: dt,
					Scale: 1.0 / 255, Mean: mean, Std: std}
				dst := make([]byte, c.ImageBytes())
				if err := c.Preprocess(dst, img); err != nil {
					t.Fatal(err)
				}
				for y := range H {
					for x := range W {
						for oc := range 3 {
							sc := oc
							if order == BGR {
								sc = 2 - oc
							}
							want := (float32(rgb[(y*W+x)*3+sc])/255 - mean[oc]) / std[oc]
							i := (oc*H+y)*W + x
							if layout == NHWC {
								i = (y*W+x)*3 + oc
							}
							var got float32
							if dt == tensor.FP16 {
								got = tensor.FP16To32(binary.LittleEndian.Uint16(dst[2*i:]))
								want = tensor.FP16To32(fp16Bits(want))
							} else {
								got = math.Float32frombits(binary.LittleEndian.Uint32(dst[4*i:]))
							}
							if math.Abs(float64(got-want)) > 1e-6 {
								t.Fatalf("%s %s %s (y=%d x=%d c=%d) = %v, want %v", layout, order, dt, y, x, oc, got, want)
							}
						}
					}
				}
			}
		}
	}
}

func TestFP16Bits(t *testing.T) {
	for _, tt := range []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {255, 0x5bf8}, {65504, 0x7bff}, {65520, 0x7c00},
		{1.0 / 3, 0x3555}, {float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001},
		{2.9802322387695312e-08, 0}, // exactly half the smallest subnormal: ties to even, 0
		{1 + 1.0/2048, 0x3c00},      // halfway between 1 and the next FP16: ties to even
		{1 + 3.0/2048, 0x3c02},
	} {
		if got := fp16Bits(tt.f); got != tt.want {
			t.Errorf("fp16Bits(%v) = %#04x, want %#04x", tt.f, got, tt.want)
		}
		if got := tensor.FP16To32(tt.want); tt.want != 0x7c00 && !math.IsInf(float64(tt.f), 0) && fp16Bits(got) != tt.want {
			t.Errorf("tensor.FP16To32(%#04x) = %v does not round-trip", tt.want, got)
		}
	}
	if h := fp16Bits(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("fp16Bits(NaN) = %#04x, want a NaN", h)
	}
}

// TestConcurrentPreprocess runs many Preprocess calls at once (under -race
// this checks the pools) and compares with a sequential run.
func TestConcurrentPreprocess(t *testing.T) {
	inputs := [][]byte{encodeJPEG(t, gradient(300, 200)), encodePNG(t, gradient(120, 90)), []byte("junk")}
	c := Config{Width: 32, Height: 32, Resize: ShorterCrop, DType: tensor.FP16}
	want := make([][]byte, len(inputs))
	for i, in := range inputs {
		want[i] = make([]byte, c.ImageBytes())
		_ = c.Preprocess(want[i], in)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(inputs))
	for range 8 {
		for i, in := range inputs {
			wg.Go(func() {
				got := make([]byte, c.ImageBytes())
				_ = c.Preprocess(got, in)
				if string(got) != string(want[i]) {
					errs <- sniff(in)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent Preprocess of a %s differs from the sequential result", e)
	}
}
