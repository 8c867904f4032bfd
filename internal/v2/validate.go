package v2

import (
	"net/http"
	"strings"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Validate checks r against the model: every model input present exactly
// once, no unknown input, datatypes equal, shapes accepted by Spec.Accepts,
// and every requested output declared by the model. The error is an *Error
// with Status 400 naming the input or output and, for mismatches, both the
// request's and the model's datatype or shape.
func (r *InferRequest) Validate(md *tensor.Metadata) error { return r.validate(md, true) }

// ValidatePrefix is Validate for the part of a request a prefix decode
// read (Truncated.Request): the same checks, less the missing inputs,
// which may come later in the body.
func (r *InferRequest) ValidatePrefix(md *tensor.Metadata) error { return r.validate(md, false) }

func (r *InferRequest) validate(md *tensor.Metadata, whole bool) error {
	seen := make(map[string]bool, len(r.Inputs))
	for i := range r.Inputs {
		t := &r.Inputs[i]
		spec, ok := md.Input(t.Name)
		switch {
		case !ok:
			return badRequest("unknown input %q (the model's inputs are: %s)", t.Name, specNames(md.Inputs))
		case seen[t.Name]:
			return badRequest("input %q appears more than once", t.Name)
		case t.DType != spec.DType:
			return badRequest("input %q: datatype %s does not match the model's %s", t.Name, t.DType, spec.DType)
		}
		seen[t.Name] = true
		if err := spec.Accepts(t.Shape); err != nil {
			return &Error{Status: http.StatusBadRequest, Msg: err.Error()}
		}
	}
	for _, spec := range md.Inputs {
		if whole && !seen[spec.Name] {
			return badRequest("missing input %q", spec.Name)
		}
	}
	for _, o := range r.Outputs {
		if _, ok := md.Output(o.Name); !ok {
			return badRequest("unknown output %q (the model's outputs are: %s)", o.Name, specNames(md.Outputs))
		}
	}
	return nil
}

func specNames(specs []tensor.Spec) string {
	if len(specs) == 0 {
		return "none"
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}
