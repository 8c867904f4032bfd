package tensor

import "fmt"

// Spec declares one model input or output. A dimension of -1 is dynamic:
// any size is accepted there.
type Spec struct {
	Name  string  `json:"name"`
	DType DType   `json:"datatype"`
	Shape []int64 `json:"shape"`
}

// Metadata is what a model declares about itself, read from the model file
// by ONNX Runtime: never configured by hand.
type Metadata struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
	Inputs   []Spec `json:"inputs"`
	Outputs  []Spec `json:"outputs"`
	// Identity is the content identity of the model file the infer
	// worker loaded (internal/modelid, "sha256:<hex>"); "" when unknown.
	Identity string `json:"identity,omitempty"`
}

// Input returns the input spec called name.
func (m *Metadata) Input(name string) (Spec, bool) { return findSpec(m.Inputs, name) }

// Output returns the output spec called name.
func (m *Metadata) Output(name string) (Spec, bool) { return findSpec(m.Outputs, name) }

func findSpec(specs []Spec, name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Accepts reports whether a concrete shape matches the spec: same rank, and
// equal sizes wherever the spec's dimension is not -1. The error names the
// input and both shapes, so a client can fix its request from the message.
func (s Spec) Accepts(shape []int64) error {
	if len(shape) == len(s.Shape) {
		ok := true
		for i, d := range s.Shape {
			if d >= 0 && shape[i] != d {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("input %q: shape %s does not match the model's %s",
		s.Name, FormatShape(shape), FormatShape(s.Shape))
}

// SpecNames is the specs' names, comma-separated, for messages.
func SpecNames(specs []Spec) string {
	s := ""
	for i, sp := range specs {
		if i > 0 {
			s += ", "
		}
		s += sp.Name
	}
	return s
}
