package imageprep

import (
	"fmt"
	"strings"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Settings are an image model's preprocessing as the operator writes it
// (a model's preprocess section) and as the master sends it to prep
// workers (worker.ImageInput is this type): the one schema of image
// preprocessing. Its yaml tags are the config's keys (the config decodes
// them from these tags), its json tags the wire's. Check is its one
// validation. Config resolves it against the model's input into the
// Config that decodes images.
//
// Width, Height and DType may be left to the model (0, ""). Every other
// zero value is what Config documents for it when the Settings are built
// in code; a config file gets the explicit defaults the config package
// fills in before Check.
type Settings struct {
	// Width and Height are the input's spatial size; 0 takes it from the
	// model's declared input (which must then be fixed there).
	Width  int `yaml:"width" json:"width,omitempty"`
	Height int `yaml:"height" json:"height,omitempty"`
	// Resize is Stretch (the whole image to Width×Height, ignoring its
	// aspect) or ShorterCrop (keep the aspect, resize the shorter side,
	// crop the centre: torchvision's Resize + CenterCrop).
	Resize string `yaml:"resize" json:"resize,omitempty"`
	// Interpolation is Bilinear or Nearest, each as Pillow does it.
	Interpolation string `yaml:"interpolation" json:"interpolation,omitempty"`
	// ChannelOrder is RGB or BGR.
	ChannelOrder string `yaml:"channel_order" json:"channel_order,omitempty"`
	// Scale multiplies the 0–255 samples before Mean and Std: 1 keeps
	// 0–255, 1/255 gives 0–1. The file may write a fraction ("1/255").
	Scale float32 `yaml:"scale" json:"scale,omitempty"`
	// Mean and Std normalise each channel after Scale, as (v-mean)/std, in
	// the output channel order.
	Mean [3]float32 `yaml:"mean,flow" json:"mean"`
	Std  [3]float32 `yaml:"std,flow" json:"std"`
	// Layout is NCHW or NHWC.
	Layout string `yaml:"layout" json:"layout,omitempty"`
	// DType is the input's element type: FP32, FP16 or UINT8; "" takes
	// the model input's.
	DType string `yaml:"dtype" json:"dtype,omitempty"`
	// MaxPixels rejects (400) an image whose header declares more pixels,
	// before anything is decoded: the decompression-bomb guard.
	MaxPixels int `yaml:"max_pixels" json:"max_pixels,omitempty"`
	// MaxImages rejects (400) a request carrying more images.
	MaxImages int `yaml:"max_images" json:"max_images,omitempty"`
	// MaxRequestPixels rejects (400) a request whose images together
	// declare more pixels, read from their headers before any is
	// decoded: what one request may make a prep worker decode. 0 means
	// four times MaxPixels.
	MaxRequestPixels int `yaml:"max_request_pixels" json:"max_request_pixels,omitempty"`
}

// MaxImagesLimit bounds Settings.MaxImages.
const MaxImagesLimit = 4096

// SettingError is one Settings field out of range. Key is its YAML key,
// with the channel for mean and std ("std[1]"), so the config can name
// the line it came from.
type SettingError struct {
	Key     string
	Problem string
}

func (e *SettingError) Error() string { return e.Key + ": " + e.Problem }

// Check reports every field of s that is out of range, in field order.
func (s *Settings) Check() []*SettingError {
	var errs []*SettingError
	bad := func(key, format string, args ...any) {
		errs = append(errs, &SettingError{Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	for _, side := range []struct {
		key string
		n   int
	}{{"width", s.Width}, {"height", s.Height}} {
		if side.n < 0 || side.n > maxSide {
			bad(side.key, "%d is out of range (use 0 to take it from the model's input, or 1 to %d)", side.n, maxSide)
		}
	}
	for _, f := range []struct{ key, v string }{{"resize", s.Resize}, {"interpolation", s.Interpolation}, {"channel_order", s.ChannelOrder}} {
		if err := settingOneOf(f.v, settingChoices[f.key]...); err != "" {
			bad(f.key, "%s", err)
		}
	}
	s.checkValues(bad)
	s.checkLimits(bad)
	return errs
}

// settingChoices are the values each string key takes.
var settingChoices = map[string][]string{
	"resize": {Stretch, ShorterCrop}, "interpolation": {Bilinear, Nearest},
	"channel_order": {RGB, BGR}, "layout": {NCHW, NHWC}, "dtype": {"FP32", "FP16", "UINT8"},
}

// checkValues checks scale, mean, std, layout and dtype.
func (s *Settings) checkValues(bad func(key, format string, args ...any)) {
	if !finite(s.Scale) || s.Scale <= 0 {
		bad("scale", "%v must be a positive number (1 keeps 0–255, 1/255 gives 0–1)", s.Scale)
	}
	for i := range 3 {
		if !finite(s.Mean[i]) {
			bad(fmt.Sprintf("mean[%d]", i), "%v is not a finite number", s.Mean[i])
		}
		if !finite(s.Std[i]) || s.Std[i] == 0 {
			bad(fmt.Sprintf("std[%d]", i), "%v must be a finite number other than 0", s.Std[i])
		}
	}
	if err := settingOneOf(s.Layout, settingChoices["layout"]...); err != "" {
		bad("layout", "%s", err)
	}
	if s.DType != "" {
		if err := settingOneOf(s.DType, settingChoices["dtype"]...); err != "" {
			bad("dtype", "%s", err)
		}
	}
	if s.DType == "UINT8" && (s.Scale != 1 || s.Mean != [3]float32{} || s.Std != [3]float32{1, 1, 1}) {
		bad("dtype", "UINT8 carries the raw 0–255 samples: leave scale, mean and std at 1, [0, 0, 0] and [1, 1, 1], or use FP32 or FP16")
	}
}

// checkLimits checks max_pixels, max_images and max_request_pixels.
func (s *Settings) checkLimits(bad func(key, format string, args ...any)) {
	if s.MaxPixels < 1 {
		bad("max_pixels", "%d must be at least 1 (the default is %d, 40 megapixels)", s.MaxPixels, DefaultMaxPixels)
	}
	if s.MaxImages < 1 || s.MaxImages > MaxImagesLimit {
		bad("max_images", "%d is out of range (use 1 to %d)", s.MaxImages, MaxImagesLimit)
	}
	switch {
	case s.MaxRequestPixels < 0:
		bad("max_request_pixels", "%d is negative; use 0 (four times max_pixels) or a number of pixels at least max_pixels", s.MaxRequestPixels)
	case s.MaxRequestPixels != 0 && s.MaxRequestPixels < s.MaxPixels:
		bad("max_request_pixels", "%d is less than max_pixels (%d), so an image max_pixels allows could never be sent; use 0 (four times max_pixels) or at least %d",
			s.MaxRequestPixels, s.MaxPixels, s.MaxPixels)
	}
}

// settingOneOf is "" when v is one of allowed, else what is wrong.
func settingOneOf(v string, allowed ...string) string {
	for _, a := range allowed {
		if v == a {
			return ""
		}
	}
	return fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

// Config is the Config these settings describe, with Width, Height and
// DType as given (0, "" and Invalid where left to the model: the caller
// resolves them against the model's input, then Validates).
func (s *Settings) Config() Config {
	c := Config{Width: s.Width, Height: s.Height, Resize: s.Resize, Interpolation: s.Interpolation,
		ChannelOrder: s.ChannelOrder, Scale: s.Scale, Mean: s.Mean, Std: s.Std, Layout: s.Layout, MaxPixels: s.MaxPixels}
	if s.DType != "" {
		c.DType, _ = tensor.ParseDType(s.DType)
	}
	return c
}
