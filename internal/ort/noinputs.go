package ort

import (
	"context"
	"fmt"

	onnxruntime "github.com/yalue/onnxruntime_go"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Models with no inputs (a graph of constants, like ONNX's test_constant):
// onnxruntime_go v1.27.0's DynamicAdvancedSession.Run passes &inputs[0] to
// C and panics when there is none. Its I/O binding path (RunWithBinding)
// takes no input array, so such a model runs there instead, with every
// output bound to a buffer this package preallocates (planOutputs plans
// every output of such a model). That needs each output's shape before the
// run, so Open refuses a model with no inputs and an output of dynamic
// shape; STRING outputs, which have no buffer to preallocate, are refused
// too.

// checkNoInputs reports why a model with no inputs cannot run, or nil.
func checkNoInputs(outputs []tensor.Spec) error {
	for _, o := range outputs {
		if o.DType == tensor.Bytes {
			return fmt.Errorf("it has no inputs and output %q is STRING, which the server cannot preallocate (onnxruntime_go runs a model without inputs only on preallocated outputs)", o.Name)
		}
		for _, d := range o.Shape {
			if d < 0 {
				return fmt.Errorf("it has no inputs and output %q has dynamic shape %s, which the server cannot preallocate (onnxruntime_go runs a model without inputs only on preallocated outputs)",
					o.Name, tensor.FormatShape(o.Shape))
			}
		}
	}
	return nil
}

// runBound runs a model with no inputs on the preallocated outputs outs,
// through an I/O binding, terminated when ctx ends.
func (s *Session) runBound(ctx context.Context, outs []onnxruntime.Value) error {
	b, err := s.sess.CreateIoBinding()
	if err != nil {
		return fmt.Errorf("could not create an I/O binding: %w", err)
	}
	defer b.Destroy()
	for j, v := range outs {
		if err := b.BindOutput(s.meta.Outputs[j].Name, v); err != nil {
			return fmt.Errorf("could not bind output %q: %w", s.meta.Outputs[j].Name, err)
		}
	}
	handle, err := bindingHandle(b)
	if err != nil {
		return err
	}
	return s.runWithBinding(ctx, handle)
}
