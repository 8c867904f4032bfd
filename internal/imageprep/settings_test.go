package imageprep

import (
	"testing"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// TestSettingsCheckAndConfigAgree: settings Check accepts give a Config
// that Validate accepts once the size is resolved; a std of 0 in any
// channel is refused by both (Check names the key the config blames).
func TestSettingsCheckAndConfigAgree(t *testing.T) {
	good := Settings{Width: 224, Height: 224, Resize: ShorterCrop, Interpolation: Nearest, ChannelOrder: BGR,
		Scale: 1.0 / 255, Mean: [3]float32{0.4, 0.5, 0.6}, Std: [3]float32{0.2, 0.25, 0.3}, Layout: NHWC, DType: "FP16",
		MaxPixels: 1 << 20, MaxImages: 8}
	if errs := good.Check(); len(errs) != 0 {
		t.Fatalf("Check(%+v) = %v, want none", good, errs)
	}
	c := good.Config()
	if err := c.Validate(); err != nil || c.DType != tensor.FP16 || c.Layout != NHWC || c.Std != good.Std {
		t.Fatalf("Config() = %+v, Validate: %v", c, err)
	}
	zero := good
	zero.Std[1] = 0
	errs := zero.Check()
	if len(errs) != 1 || errs[0].Key != "std[1]" {
		t.Errorf("Check with std[1] = 0: %v, want one error at std[1]", errs)
	}
	c = zero.Config()
	if err := c.Validate(); err == nil {
		t.Error("Validate accepted a Config with Std[1] = 0 beside set channels")
	}
}

func TestSettingsCheckReportsEveryField(t *testing.T) {
	bad := Settings{Width: -1, Height: 9000, Resize: "squash", Interpolation: "bicubic", ChannelOrder: "rgb", Scale: 0,
		Layout: "CHW", DType: "INT8", MaxPixels: 0, MaxImages: 5000, MaxRequestPixels: -1}
	var keys []string
	for _, e := range bad.Check() {
		keys = append(keys, e.Key)
	}
	want := []string{"width", "height", "resize", "interpolation", "channel_order", "scale", "std[0]", "std[1]", "std[2]",
		"layout", "dtype", "max_pixels", "max_images", "max_request_pixels"}
	if len(keys) != len(want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Errorf("key %d = %s, want %s (all: %v)", i, keys[i], want[i], keys)
		}
	}
}
