package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/supervisor-dev/supervisor/internal/imageprep"
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

// Defaults of an image model's preprocess keys, and the bound of top_k.
const (
	defaultMaxImages = 64
	maxTopK          = 1 << 20
)

// PreprocessConfig is a model's preprocess section: its kind and, for
// KindImage, the image settings, whose schema and validation are
// imageprep.Settings (the one definition, shared with the prep workers'
// spec: worker.ImageInput).
type PreprocessConfig struct {
	// Kind is KindTensor or KindImage.
	Kind               string `yaml:"kind"`
	imageprep.Settings `yaml:",inline"`
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
	return PreprocessConfig{Kind: KindTensor, Settings: imageprep.Settings{
		Resize:        imageprep.Stretch,
		Interpolation: imageprep.Bilinear,
		ChannelOrder:  imageprep.RGB,
		Scale:         1,
		Std:           [3]float32{1, 1, 1},
		Layout:        imageprep.NCHW,
		MaxPixels:     imageprep.DefaultMaxPixels,
		MaxImages:     defaultMaxImages,
	}}
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

// imagePreprocess reports what imageprep.Settings.Check finds, each at
// its key's line.
func (v *configValidator) imagePreprocess(f string, p *PreprocessConfig) {
	for _, e := range p.Check() {
		v.errorf(f+"."+e.Key, "%s", e.Problem)
	}
}

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
