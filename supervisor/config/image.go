package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A model's preprocess and postprocess sections: what the prep stage does
// to requests before and to outputs after inference. The values are
// checked here, without the model; whether they fit the model's declared
// input (rank, channels, size, dtype) is checked by each prep worker once
// it has the model's metadata, and a misfit fails its boot with a message
// naming the model.

// Preprocessing input kinds.
const (
	// KindTensor: clients send the model's input tensors (V2 JSON or
	// binary), as for any model.
	KindTensor = "tensor"
	// KindImage: clients send encoded images (JPEG or PNG), as a V2 BYTES
	// tensor or a raw image/jpeg or image/png body; the prep stage decodes
	// and resizes them into the model's only input.
	KindImage = "image"
)

// Defaults of an image model's preprocess keys.
const (
	defaultMaxPixels = 40_000_000 // above an 8K photo (33 MP)
	defaultMaxImages = 64
	maxImageSide     = 8192
	maxMaxImages     = 4096
	maxTopK          = 1 << 20
)

// PreprocessConfig is a model's preprocess section. The keys after Kind
// apply to KindImage only.
type PreprocessConfig struct {
	// Kind is KindTensor or KindImage.
	Kind string `yaml:"kind"`
	// Width and Height are the input's spatial size; 0 takes it from the
	// model's declared input (which must then be fixed there).
	Width  int `yaml:"width"`
	Height int `yaml:"height"`
	// Resize is "stretch" (the whole image to Width×Height, ignoring its
	// aspect) or "shorter-crop" (keep the aspect, resize the shorter side,
	// crop the centre: torchvision's Resize + CenterCrop).
	Resize string `yaml:"resize"`
	// Interpolation is "bilinear" or "nearest", each as Pillow does it.
	Interpolation string `yaml:"interpolation"`
	// ChannelOrder is "RGB" or "BGR".
	ChannelOrder string `yaml:"channel_order"`
	// Scale multiplies the 0–255 samples before Mean and Std: 1 keeps
	// 0–255, 1/255 gives 0–1. The file may write a fraction ("1/255").
	Scale float32 `yaml:"scale"`
	// Mean and Std normalise each channel after Scale, as (v-mean)/std, in
	// the output channel order.
	Mean [3]float32 `yaml:"mean,flow"`
	Std  [3]float32 `yaml:"std,flow"`
	// Layout is "NCHW" or "NHWC".
	Layout string `yaml:"layout"`
	// DType is the input's element type: FP32, FP16 or UINT8; "" takes
	// the model input's.
	DType string `yaml:"dtype"`
	// MaxPixels rejects (400) an image whose header declares more pixels,
	// before anything is decoded: the decompression-bomb guard.
	MaxPixels int `yaml:"max_pixels"`
	// MaxImages rejects (400) a request carrying more images.
	MaxImages int `yaml:"max_images"`
	// MaxRequestPixels rejects (400) a request whose images together
	// declare more pixels, read from their headers before any is
	// decoded: what one request may make a prep worker decode. 0 means
	// four times MaxPixels.
	MaxRequestPixels int `yaml:"max_request_pixels"`
}

// MarshalYAML writes only the kind of a kind: tensor section, whose other
// keys do not apply (and are refused when written).
func (p PreprocessConfig) MarshalYAML() (any, error) {
	if p.Kind == KindTensor {
		return map[string]string{"kind": p.Kind}, nil
	}
	type plain PreprocessConfig // without this method
	return plain(p), nil
}

// PostprocessConfig is a model's postprocess section: the classification
// extension (Triton's) for one output.
type PostprocessConfig struct {
	// Output is the output ranked; "" means the model's only output.
	Output string `yaml:"output"`
	// Labels is a file with one label per line, in class order; "" means
	// none (classes are reported by index only).
	Labels string `yaml:"labels"`
	// Softmax turns the output's scores into probabilities before ranking
	// (for models that output logits).
	Softmax bool `yaml:"softmax"`
	// TopK, for an image model, makes a raw image body's response carry
	// the top K classes of Output instead of its scores; 0 returns the
	// scores. V2 requests ask per output with parameters.classification.
	TopK int `yaml:"top_k"`
}

// defaultPreprocess is what a preprocess section's missing keys mean.
func defaultPreprocess() PreprocessConfig {
	return PreprocessConfig{
		Kind:          KindTensor,
		Resize:        "stretch",
		Interpolation: "bilinear",
		ChannelOrder:  "RGB",
		Scale:         1,
		Std:           [3]float32{1, 1, 1},
		Layout:        "NCHW",
		MaxPixels:     defaultMaxPixels,
		MaxImages:     defaultMaxImages,
	}
}

// preprocess decodes a model's preprocess section over the defaults; its
// keys are PreprocessConfig's yaml tags (fieldKeys).
func (d *configDecoder) preprocess(dst **PreprocessConfig) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		p := defaultPreprocess()
		*dst = &p
		d.mapping(n, field, d.fieldKeys(&p))
	}
}

// postprocess decodes a model's postprocess section; its keys are
// PostprocessConfig's yaml tags (fieldKeys).
func (d *configDecoder) postprocess(dst **PostprocessConfig) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		p := PostprocessConfig{}
		*dst = &p
		d.mapping(n, field, d.fieldKeys(&p))
	}
}

// float reads a number, or a fraction such as 1/255.
func (d *configDecoder) float(dst *float32) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if !d.scalar(n, field, "a number") {
			return
		}
		v, err := parseFloat32(n.Value)
		if err != nil {
			d.errorf(n, field, "%v", err)
			return
		}
		*dst = v
	}
}

// floats3 reads a list of three numbers, one per channel.
func (d *configDecoder) floats3(dst *[3]float32) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if n.Kind != yaml.SequenceNode || len(n.Content) != 3 {
			d.errorf(n, field, "want a list of 3 numbers, one per channel (e.g. [0.485, 0.456, 0.406]), got %s", yamlKindName(n))
			return
		}
		for i, item := range n.Content {
			item = yamlDeref(item)
			v, err := parseFloat32(item.Value)
			if item.Kind != yaml.ScalarNode || err != nil {
				d.errorf(item, fmt.Sprintf("%s[%d]", field, i), "want a number, got %s", yamlKindName(item))
				continue
			}
			dst[i] = v
		}
	}
}

// parseFloat32 reads "0.5", "1e-3" or a fraction "1/255" (rounded once, to
// float32).
func parseFloat32(s string) (float32, error) {
	bad := fmt.Errorf("%q is not a number (e.g. 0.5, 1e-3, or a fraction such as 1/255)", s)
	num, den, frac := strings.Cut(strings.TrimSpace(s), "/")
	a, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil {
		return 0, bad
	}
	if frac {
		b, err := strconv.ParseFloat(strings.TrimSpace(den), 64)
		if err != nil || b == 0 {
			return 0, bad
		}
		a /= b
	}
	return float32(a), nil
}

// modelProcessing validates models[i]'s preprocess and postprocess
// sections.
func (v *configValidator) modelProcessing(field string, m ModelConfig) {
	image := false
	if p := m.Preprocess; p != nil {
		f := field + ".preprocess"
		switch p.Kind {
		case KindImage:
			image = true
			v.imagePreprocess(f, p)
		case KindTensor:
			v.tensorPreprocess(f)
		default:
			v.errorf(f+".kind", "%q is not an input kind (use tensor, or image for encoded JPEG/PNG images)", p.Kind)
		}
	}
	if p := m.Postprocess; p != nil {
		f := field + ".postprocess"
		switch {
		case p.TopK < 0 || p.TopK > maxTopK:
			v.errorf(f+".top_k", "%d is out of range (use 0 to return the scores, or 1 to %d classes)", p.TopK, maxTopK)
		case p.TopK > 0 && !image:
			v.errorf(f+".top_k", "applies to raw image bodies, so only to a model with preprocess kind: image (V2 requests ask with the output's parameters.classification)")
		}
	}
}

// tensorPreprocess reports image keys written under kind: tensor, which
// would otherwise be silently ignored.
func (v *configValidator) tensorPreprocess(field string) {
	for _, k := range yamlKeys(reflect.TypeFor[PreprocessConfig]()) {
		if _, ok := v.origin.lines[field+"."+k]; ok && k != "kind" {
			v.errorf(field+"."+k, "applies only to kind: image (set kind: image, or remove it)")
		}
	}
}

func (v *configValidator) imagePreprocess(f string, p *PreprocessConfig) {
	for _, side := range []struct {
		key string
		n   int
	}{{"width", p.Width}, {"height", p.Height}} {
		if side.n < 0 || side.n > maxImageSide {
			v.errorf(f+"."+side.key, "%d is out of range (use 0 to take it from the model's input, or 1 to %d)", side.n, maxImageSide)
		}
	}
	v.oneOf(f+".resize", p.Resize, "stretch", "shorter-crop")
	v.oneOf(f+".interpolation", p.Interpolation, "bilinear", "nearest")
	v.oneOf(f+".channel_order", p.ChannelOrder, "RGB", "BGR")
	v.oneOf(f+".layout", p.Layout, "NCHW", "NHWC")
	if p.DType != "" {
		v.oneOf(f+".dtype", p.DType, "FP32", "FP16", "UINT8")
	}
	if !finite32(p.Scale) || p.Scale <= 0 {
		v.errorf(f+".scale", "%v must be a positive number (1 keeps 0–255, 1/255 gives 0–1)", p.Scale)
	}
	for i := range 3 {
		if !finite32(p.Mean[i]) {
			v.errorf(fmt.Sprintf("%s.mean[%d]", f, i), "%v is not a finite number", p.Mean[i])
		}
		if !finite32(p.Std[i]) || p.Std[i] == 0 {
			v.errorf(fmt.Sprintf("%s.std[%d]", f, i), "%v must be a finite number other than 0", p.Std[i])
		}
	}
	if p.DType == "UINT8" && (p.Scale != 1 || p.Mean != [3]float32{} || p.Std != [3]float32{1, 1, 1}) {
		v.errorf(f+".dtype", "UINT8 carries the raw 0–255 samples: leave scale, mean and std at 1, [0, 0, 0] and [1, 1, 1], or use FP32 or FP16")
	}
	if p.MaxPixels < 1 {
		v.errorf(f+".max_pixels", "%d must be at least 1 (the default is %d, 40 megapixels)", p.MaxPixels, defaultMaxPixels)
	}
	if p.MaxImages < 1 || p.MaxImages > maxMaxImages {
		v.errorf(f+".max_images", "%d is out of range (use 1 to %d)", p.MaxImages, maxMaxImages)
	}
	switch {
	case p.MaxRequestPixels < 0:
		v.errorf(f+".max_request_pixels", "%d is negative; use 0 (four times max_pixels) or a number of pixels at least max_pixels", p.MaxRequestPixels)
	case p.MaxRequestPixels != 0 && p.MaxRequestPixels < p.MaxPixels:
		v.errorf(f+".max_request_pixels", "%d is less than max_pixels (%d), so an image max_pixels allows could never be sent; use 0 (four times max_pixels) or at least %d",
			p.MaxRequestPixels, p.MaxPixels, p.MaxPixels)
	}
}

func (v *configValidator) oneOf(field, val string, allowed ...string) {
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.errorf(field, "%q is not one of %s", val, strings.Join(allowed, ", "))
}

func finite32(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// labelsFileErrors checks that each postprocess labels file exists, as
// CheckFiles does for model files.
func (c *Config) labelsFileErrors() []error {
	var errs []error
	for i, m := range c.Models {
		if m.Postprocess == nil || m.Postprocess.Labels == "" {
			continue
		}
		if err := checkRegularFile(m.Postprocess.Labels, "labels file", "a text file with one label per line"); err != nil {
			field := fmt.Sprintf("models[%d].postprocess.labels", i)
			errs = append(errs, &ConfigError{Source: c.origin.source, Line: c.origin.line(field), Field: field,
				Problem: fmt.Sprintf("model %q: %v", m.Name, err), Err: err})
		}
	}
	return errs
}
