package imageprep

import (
	"errors"
	"fmt"
	"math"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Resize modes.
const (
	// Stretch resizes the whole image to Width×Height, ignoring its aspect.
	Stretch = "stretch"
	// ShorterCrop resizes the image, keeping its aspect, so that it just
	// covers Width×Height, then keeps the centred Width×Height window (for a
	// square target: torchvision's Resize(size) + CenterCrop(size)).
	ShorterCrop = "shorter-crop"
)

// Interpolations.
const (
	Bilinear = "bilinear"
	Nearest  = "nearest"
)

// Channel orders and layouts.
const (
	RGB  = "RGB"
	BGR  = "BGR"
	NCHW = "NCHW"
	NHWC = "NHWC"
)

// DefaultMaxPixels is the pixel limit when Config.MaxPixels is 0: 40
// megapixels, above an 8K photo (33 MP), about 120 MB decoded.
const DefaultMaxPixels = 40_000_000

// maxSide bounds Width and Height; no image model takes more.
const maxSide = 8192

// Config describes the tensor one image becomes. The zero value of each
// field except Width and Height means its documented default.
type Config struct {
	// Width and Height are the tensor's spatial size, e.g. 224×224.
	Width, Height int
	// Resize is Stretch or ShorterCrop; "" means Stretch.
	Resize string
	// Interpolation is Bilinear (Pillow's BILINEAR) or Nearest (Pillow's
	// NEAREST); "" means Bilinear.
	Interpolation string
	// ChannelOrder is RGB or BGR; "" means RGB.
	ChannelOrder string
	// Scale multiplies the 0–255 samples: 1 keeps 0–255, 1/255 gives 0–1.
	// 0 means 1.
	Scale float32
	// Mean and Std normalise each channel after Scale, as (v-Mean)/Std, in
	// the output channel order (for BGR, Mean[0] is blue's). A Std left
	// wholly 0 means 1; a 0 in some channels only is invalid.
	Mean, Std [3]float32
	// Layout is NCHW or NHWC; "" means NCHW.
	Layout string
	// DType is the element type: tensor.FP32, FP16 or Uint8; Invalid (the
	// zero value) means FP32. Uint8 carries the raw 0–255 samples, so Scale,
	// Mean and Std must be left at their defaults.
	DType tensor.DType
	// MaxPixels rejects images whose header declares more than this many
	// pixels (width×height) before anything is decoded: the
	// decompression-bomb guard. 0 means DefaultMaxPixels.
	MaxPixels int

	// fullDecode turns off DCT-domain downscaling of JPEGs, so that tests can
	// compare with Pillow's full-size decode.
	fullDecode bool
}

// Validate reports the first field that is out of range, by name.
func (c *Config) Validate() error {
	if c.Width < 1 || c.Height < 1 || c.Width > maxSide || c.Height > maxSide {
		return fmt.Errorf("imageprep: Width×Height %d×%d: each must be in 1..%d", c.Width, c.Height, maxSide)
	}
	if err := oneOf("Resize", c.Resize, Stretch, ShorterCrop); err != nil {
		return err
	}
	if err := oneOf("Interpolation", c.Interpolation, Bilinear, Nearest); err != nil {
		return err
	}
	if err := oneOf("ChannelOrder", c.ChannelOrder, RGB, BGR); err != nil {
		return err
	}
	if err := oneOf("Layout", c.Layout, NCHW, NHWC); err != nil {
		return err
	}
	if err := c.validateValues(); err != nil {
		return err
	}
	if c.MaxPixels < 0 {
		return fmt.Errorf("imageprep: MaxPixels %d is negative; 0 means the default %d", c.MaxPixels, DefaultMaxPixels)
	}
	return nil
}

// validateValues checks DType, Scale, Mean and Std together, since which
// values make sense depends on the element type.
func (c *Config) validateValues() error {
	switch c.DType {
	case tensor.Invalid, tensor.FP32, tensor.FP16:
	case tensor.Uint8:
		if (c.Scale != 0 && c.Scale != 1) || c.Mean != [3]float32{} || (c.Std != [3]float32{} && c.Std != [3]float32{1, 1, 1}) {
			return errors.New("imageprep: DType UINT8 carries raw 0–255 samples: leave Scale, Mean and Std unset, or use FP32/FP16")
		}
	default:
		return fmt.Errorf("imageprep: DType %s is not one of FP32, FP16, UINT8", c.DType)
	}
	if !finite(c.Scale) || c.Scale < 0 {
		return fmt.Errorf("imageprep: Scale %v must be a positive number (0 means 1)", c.Scale)
	}
	for i := range 3 {
		if !finite(c.Mean[i]) {
			return fmt.Errorf("imageprep: Mean[%d] %v is not a finite number", i, c.Mean[i])
		}
		if !finite(c.Std[i]) {
			return fmt.Errorf("imageprep: Std[%d] %v is not a finite number (0 means 1)", i, c.Std[i])
		}
		if c.Std[i] == 0 && c.Std != [3]float32{} {
			// Only Std left wholly unset means 1; a 0 beside set channels is
			// a mistake (Settings.Check refuses it in a config too).
			return fmt.Errorf("imageprep: Std[%d] is 0 while other channels are set: a channel cannot be divided by 0 (leave all of Std unset for 1)", i)
		}
	}
	return nil
}

func oneOf(field, v string, allowed ...string) error {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("imageprep: %s %q is not one of %q", field, v, allowed)
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// Shape is the tensor shape of batch images: [batch,3,Height,Width] for
// NCHW, [batch,Height,Width,3] for NHWC.
func (c *Config) Shape(batch int) []int64 {
	n, h, w := int64(batch), int64(c.Height), int64(c.Width)
	if c.Layout == NHWC {
		return []int64{n, h, w, 3}
	}
	return []int64{n, 3, h, w}
}

// ImageBytes is the size of one image's tensor: the length dst must have.
func (c *Config) ImageBytes() int { return c.Width * c.Height * 3 * c.dtype().Size() }

// dtype resolves the DType default.
func (c *Config) dtype() tensor.DType {
	if c.DType == tensor.Invalid {
		return tensor.FP32
	}
	return c.DType
}

func (c *Config) maxPixels() int64 {
	if c.MaxPixels == 0 {
		return DefaultMaxPixels
	}
	return int64(c.MaxPixels)
}
