package prep

import (
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/classify"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/prep/decodegate"
	"github.com/supervisor-dev/supervisor/worker/prep/imageinput"
)

// classifier is a model's configured classification postprocessing.
type classifier struct {
	output string // the output it ranks
	c      classify.Classifier
	topK   int // classes a raw image body's response carries; 0 = scores
	// labels is the labels file's name (no directory: the model
	// configuration reports it, and the server's paths are not the
	// client's business); "" = none.
	labels string
}

// process sets up m's configured processing p (worker.Spec.Processing)
// once its metadata is known; gate is the worker's decode gate. An error
// names the model and what does not fit. A model with no metadata (unavailable) is left as it is:
// nothing to check against, its routes answer 503.
func (m *model) process(p worker.Processing, gate *decodegate.Gate, log zerolog.Logger) error {
	if m.unavailable != "" {
		return nil
	}
	if p.Image != nil {
		im, err := imageinput.New(&m.md, p.Image)
		if err != nil {
			return fmt.Errorf("model %q: %w", p.Model, err)
		}
		im.Gate = gate
		m.image = im
		m.api.Inputs = []tensor.Spec{im.ClientSpec()}
		m.metaJSON = v2.AppendModelMetadata(nil, &m.api)
	}
	if p.Classify != nil {
		c, err := newClassifier(&m.md, p.Classify, log)
		if err != nil {
			return fmt.Errorf("model %q: postprocess: %w", p.Model, err)
		}
		m.classify = c
	}
	return nil
}

func newClassifier(md *tensor.Metadata, cfg *worker.Classify, log zerolog.Logger) (*classifier, error) {
	out := cfg.Output
	if out == "" {
		if len(md.Outputs) != 1 {
			return nil, fmt.Errorf("the model has %d outputs (%s): set postprocess.output to the one to classify", len(md.Outputs), tensor.SpecNames(md.Outputs))
		}
		out = md.Outputs[0].Name
	}
	spec, ok := md.Output(out)
	if !ok {
		return nil, fmt.Errorf("output %q does not exist (the model's outputs are: %s)", out, tensor.SpecNames(md.Outputs))
	}
	c := &classifier{output: out, c: classify.Classifier{Softmax: cfg.Softmax}, topK: cfg.TopK}
	if cfg.Labels == "" {
		return c, nil
	}
	labels, err := classify.ReadLabels(cfg.Labels)
	if err != nil {
		return nil, err
	}
	c.c.Labels, c.labels = labels, filepath.Base(cfg.Labels)
	if n, ok := classes(spec.Shape); ok && n != int64(len(labels)) {
		log.Warn().Str("output", out).Int64("classes", n).Int("labels", len(labels)).Str("labels_file", cfg.Labels).
			Msg("the labels file does not have one label per class; classes past its end are reported by index only")
	}
	return c, nil
}

// classes is the number of classes of an output [batch, ...]: the product
// of its dimensions after the first, when they are fixed.
func classes(shape []int64) (int64, bool) {
	if len(shape) < 2 {
		return 0, false
	}
	n, err := tensor.NumElements(shape[1:])
	for _, d := range shape[1:] {
		if d < 0 {
			return 0, false
		}
	}
	return n, err == nil
}

// postprocess applies the classification extension: each requested output
// with parameters.classification K is replaced by its top K classes.
func (m *model) postprocess(req *v2.InferRequest, outs []tensor.Tensor) error {
	for _, o := range req.Outputs {
		if o.Classification > 0 {
			if err := m.classifyOutput(outs, o.Name, o.Classification); err != nil {
				return err
			}
		}
	}
	return nil
}

// classifyOutput replaces the output called name in outs with its top k
// classes, with the model's labels and softmax when it is the configured
// output.
func (m *model) classifyOutput(outs []tensor.Tensor, name string, k int) error {
	c := &classify.Classifier{}
	if m.classify != nil && m.classify.output == name {
		c = &m.classify.c
	}
	for i := range outs {
		if outs[i].Name == name {
			t, err := c.Classify(&outs[i], k)
			if err != nil {
				return err
			}
			outs[i] = t
		}
	}
	return nil
}
