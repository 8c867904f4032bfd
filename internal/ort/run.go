package ort

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"unsafe"

	onnxruntime "github.com/yalue/onnxruntime_go"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// ErrBadInput wraps every error Run returns because of the request rather
// than the model or ORT: unknown, missing or duplicate names, wrong
// datatypes or shapes. A server answers these with a client error.
var ErrBadInput = errors.New("bad inference request")

// Run runs the model on inputs, which must name every model input exactly
// once, and returns the outputs named in outputs, in that order; nil or
// empty means all model outputs, in model order. Inputs are checked against
// the model's metadata before ORT sees them. ORT always computes every
// output, since a DynamicAdvancedSession's output names are fixed when it is
// created; the unrequested ones are dropped. Input Data is read, never
// written, and may be reused once Run returns.
func (s *Session) Run(inputs []tensor.Tensor, outputs []string) ([]tensor.Tensor, error) {
	return s.RunContext(context.Background(), inputs, outputs)
}

// RunContext is Run, stopped when ctx ends: ONNX Runtime is told to
// terminate the run (RunOptions' terminate flag), which it checks between
// nodes, so a node that never returns is not stopped. A run stopped so
// fails with context.Cause(ctx). Runs through an I/O binding (output
// binding, models with no inputs) are stopped the same way.
func (s *Session) RunContext(ctx context.Context, inputs []tensor.Tensor, outputs []string) ([]tensor.Tensor, error) {
	ordered, err := s.orderInputs(inputs)
	if err != nil {
		return nil, err
	}
	want, err := s.selectOutputs(outputs)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.sess == nil {
		return nil, fmt.Errorf("model %q: %w", s.name, ErrClosed)
	}
	return s.run(ctx, ordered, want)
}

// run wraps the validated inputs, runs ORT and converts the wanted outputs.
func (s *Session) run(ctx context.Context, inputs []*tensor.Tensor, want []int) ([]tensor.Tensor, error) {
	ins := make([]onnxruntime.Value, len(inputs))
	outs := make([]onnxruntime.Value, len(s.meta.Outputs))
	defer destroyAll(outs)
	defer destroyAll(ins)
	for i, t := range inputs {
		v, err := wrapInput(t)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", s.name, err)
		}
		ins[i] = v
	}
	if s.outMem != nil {
		result, err := s.runBinding(ctx, ins, want) // outbind.go
		runtime.KeepAlive(inputs)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", s.name, err)
		}
		return result, nil
	}
	if err := s.allocOutputs(inputs, outs); err != nil {
		return nil, err
	}
	if err := s.exec(ctx, ins, outs); err != nil {
		return nil, err
	}
	// ORT read the inputs' Go memory through pointers the GC cannot see.
	runtime.KeepAlive(inputs)
	result := make([]tensor.Tensor, len(want))
	for k, j := range want {
		spec := s.meta.Outputs[j]
		if data, ok := scalarBytes(outs[j]); ok {
			result[k] = tensor.Tensor{Name: spec.Name, DType: spec.DType, Shape: []int64{}, Data: data}
			continue
		}
		data, err := valueBytes(outs[j])
		if err != nil {
			return nil, fmt.Errorf("model %q output %q: %w", s.name, spec.Name, err)
		}
		result[k] = tensor.Tensor{Name: spec.Name, DType: spec.DType, Shape: []int64(outs[j].GetShape()), Data: data}
	}
	return result, nil
}

// allocOutputs preallocates in outs the outputs that must be: rank-0
// ones (scalar.go) and those with a plan (outshape.go); it leaves the rest
// nil, which asks onnxruntime_go to let ORT allocate them.
func (s *Session) allocOutputs(inputs []*tensor.Tensor, outs []onnxruntime.Value) error {
	for j, p := range s.outPlans {
		var v onnxruntime.Value
		var err error
		switch {
		case len(s.meta.Outputs[j].Shape) == 0:
			if v, err = newScalar(s.meta.Outputs[j].DType, nil); err != nil {
				return fmt.Errorf("model %q output %q: %w", s.name, s.meta.Outputs[j].Name, err)
			}
		case p != nil:
			if v, err = allocOutput(s.meta.Outputs[j], p.shape(inputs)); err != nil {
				return fmt.Errorf("model %q: %w", s.name, err)
			}
		}
		outs[j] = v
	}
	return nil
}

// wrapInput hands t's Data to ORT without copying it, unless it is not
// aligned for its element type (a tensor sliced out of a wire frame may not
// be): ORT's kernels may assume natural alignment.
func wrapInput(t *tensor.Tensor) (onnxruntime.Value, error) {
	if t.DType == tensor.Bytes {
		return newStringInput(t)
	}
	if len(t.Shape) == 0 {
		v, err := newScalar(t.DType, t.Data)
		if err != nil {
			return nil, fmt.Errorf("could not pass input %q to ONNX Runtime: %w", t.Name, err)
		}
		return v, nil
	}
	data := t.Data
	if len(data) == 0 {
		// A tensor with a zero dimension has no elements, but
		// onnxruntime_go refuses an empty buffer: hand it one element's
		// worth, which ORT never reads.
		data = alignedBytes(8)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(data)))%uintptr(t.DType.Size()) != 0 {
		data = alignedBytes(len(t.Data))
		copy(data, t.Data)
	}
	v, err := onnxruntime.NewCustomDataTensor(onnxruntime.Shape(t.Shape), data, elemTypeOf(t.DType))
	if err != nil {
		return nil, fmt.Errorf("could not pass input %q to ONNX Runtime: %w", t.Name, err)
	}
	return v, nil
}

// allocOutput preallocates an output of the given concrete shape.
func allocOutput(spec tensor.Spec, shape []int64) (onnxruntime.Value, error) {
	n, err := tensor.NumElements(shape)
	if err == nil && n == 0 {
		err = errors.New("it would have no elements, which onnxruntime_go cannot preallocate")
	}
	if err != nil {
		return nil, fmt.Errorf("output %q of shape %s: %w", spec.Name, tensor.FormatShape(shape), err)
	}
	v, err := onnxruntime.NewCustomDataTensor(onnxruntime.Shape(shape),
		alignedBytes(int(n)*spec.DType.Size()), elemTypeOf(spec.DType))
	if err != nil {
		return nil, fmt.Errorf("could not allocate output %q of shape %s: %w", spec.Name, tensor.FormatShape(shape), err)
	}
	return v, nil
}

// destroyAll releases every ORT value in vs that is set. When onnxruntime_go
// fails to convert an output it stores a typed nil pointer in the slice,
// whose Destroy would panic, so those are skipped too.
func destroyAll(vs []onnxruntime.Value) {
	for _, v := range vs {
		if v != nil && !reflect.ValueOf(v).IsNil() {
			v.Destroy()
		}
	}
}

// orderInputs validates inputs against the model and returns them in model
// input order.
func (s *Session) orderInputs(inputs []tensor.Tensor) ([]*tensor.Tensor, error) {
	ordered := make([]*tensor.Tensor, len(s.meta.Inputs))
	for k := range inputs {
		t := &inputs[k]
		i, ok := s.inputIndex[t.Name]
		if !ok {
			return nil, fmt.Errorf("%w: model %q has no input %q (its inputs are %s)",
				ErrBadInput, s.name, t.Name, strings.Join(specNames(s.meta.Inputs), ", "))
		}
		if ordered[i] != nil {
			return nil, fmt.Errorf("%w: input %q given twice", ErrBadInput, t.Name)
		}
		if err := checkInput(s.meta.Inputs[i], t); err != nil {
			return nil, fmt.Errorf("%w: model %q: %w", ErrBadInput, s.name, err)
		}
		ordered[i] = t
	}
	for i, t := range ordered {
		if t == nil {
			return nil, fmt.Errorf("%w: model %q needs input %q, which is missing",
				ErrBadInput, s.name, s.meta.Inputs[i].Name)
		}
	}
	return ordered, nil
}

// checkInput checks one tensor against the spec of the input it names.
func checkInput(spec tensor.Spec, t *tensor.Tensor) error {
	if t.DType != spec.DType {
		return fmt.Errorf("input %q has datatype %s, the model expects %s", t.Name, t.DType, spec.DType)
	}
	if err := spec.Accepts(t.Shape); err != nil {
		return err
	}
	return t.Check()
}

// selectOutputs maps requested output names to model output positions.
func (s *Session) selectOutputs(names []string) ([]int, error) {
	if len(names) == 0 {
		all := make([]int, len(s.meta.Outputs))
		for j := range all {
			all[j] = j
		}
		return all, nil
	}
	want := make([]int, len(names))
	seen := make(map[string]bool, len(names))
	for k, name := range names {
		j, ok := s.outputIndex[name]
		if !ok {
			return nil, fmt.Errorf("%w: model %q has no output %q (its outputs are %s)",
				ErrBadInput, s.name, name, strings.Join(specNames(s.meta.Outputs), ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: output %q requested twice", ErrBadInput, name)
		}
		seen[name] = true
		want[k] = j
	}
	return want, nil
}
