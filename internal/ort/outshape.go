package ort

import (
	"fmt"
	"os"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// onnxruntime_go v1.27.0 turns an output ORT allocated into a Go value by
// copying its data; for element types it has no Go type for (FP16, BF16:
// the default branch of createTensorFromOrtValue) it copies one byte per
// element instead of two, and the tensor it then builds is rejected, so such
// outputs cannot be left to ORT to allocate. This package preallocates them
// instead: Run hands ORT a Go buffer of the right size, which needs the
// output's shape before running. Fixed dimensions are known; a dynamic one
// is known when the model names it (dim_param) and an input dimension of the
// same name fixes it, as with a shared "batch" axis.

// outPlan says how to compute an output's shape from the inputs' shapes.
type outPlan struct {
	dims []dimSource
}

// dimSource is one output dimension: size when input < 0, otherwise the size
// of axis axis of model input input.
type dimSource struct {
	size        int64
	input, axis int
}

// needsPlan reports whether outputs of dtype d must be preallocated.
func needsPlan(d tensor.DType) bool { return d == tensor.FP16 || d == tensor.BF16 }

// planOutputs returns one plan per output of meta, nil where ORT may
// allocate the output itself (never, for a model with no inputs). It reads
// the model file only if some FP16 or BF16 output has a dynamic dimension.
func planOutputs(modelPath string, meta tensor.Metadata) ([]*outPlan, error) {
	plans := make([]*outPlan, len(meta.Outputs))
	var params map[string][]string
	for j, out := range meta.Outputs {
		if !needsPlan(out.DType) && len(meta.Inputs) > 0 {
			continue // with no inputs, every output is preallocated (noinputs.go)
		}
		p := &outPlan{dims: make([]dimSource, len(out.Shape))}
		for a, size := range out.Shape {
			if size >= 0 {
				p.dims[a] = dimSource{size: size, input: -1}
				continue
			}
			if params == nil {
				var err error
				if params, err = readSymbolicDims(modelPath); err != nil {
					return nil, err
				}
			}
			src, ok := findInputDim(meta.Inputs, params, paramAt(params, out.Name, a))
			if !ok {
				return nil, fmt.Errorf("output %q (%s %s): dimension %d is not tied by name to any input dimension, "+
					"so its size cannot be known before running, and onnxruntime_go v1.27.0 mis-sizes %s outputs it allocates itself",
					out.Name, out.DType, tensor.FormatShape(out.Shape), a, out.DType)
			}
			p.dims[a] = src
		}
		plans[j] = p
	}
	return plans, nil
}

// readSymbolicDims reads the dim_params of the model file's graph inputs
// and outputs.
func readSymbolicDims(modelPath string) (map[string][]string, error) {
	b, err := os.ReadFile(modelPath)
	if err != nil {
		return nil, fmt.Errorf("could not read %q: %w", modelPath, err)
	}
	params, err := symbolicDims(b)
	if err != nil {
		return nil, fmt.Errorf("could not read graph inputs and outputs of %q: %w", modelPath, err)
	}
	return params, nil
}

func paramAt(params map[string][]string, name string, axis int) string {
	if p := params[name]; axis < len(p) {
		return p[axis]
	}
	return ""
}

// findInputDim finds a dynamic input dimension named param.
func findInputDim(inputs []tensor.Spec, params map[string][]string, param string) (dimSource, bool) {
	if param == "" {
		return dimSource{}, false
	}
	for i, in := range inputs {
		for a, size := range in.Shape {
			if size < 0 && paramAt(params, in.Name, a) == param {
				return dimSource{input: i, axis: a}, true
			}
		}
	}
	return dimSource{}, false
}

// shape computes the output shape for inputs given in model order.
func (p *outPlan) shape(inputs []*tensor.Tensor) []int64 {
	shape := make([]int64, len(p.dims))
	for a, d := range p.dims {
		if d.input < 0 {
			shape[a] = d.size
		} else {
			shape[a] = inputs[d.input].Shape[d.axis]
		}
	}
	return shape
}
