package ort

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	onnxruntime "github.com/yalue/onnxruntime_go"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Output binding (Options.Outputs). By default a GPU session's outputs
// cross to the caller twice: ORT copies each from the device into host
// memory it allocates (pageable, so the CUDA driver stages the copy
// through a pinned buffer of its own), then onnxruntime_go copies that
// into a Go slice. With OutputsPinned, the session runs through an
// OrtIoBinding whose outputs are bound with BindOutputToDevice to
// "CudaPinned" memory (OrtDeviceAllocator, device 0, OrtMemTypeCPUOutput):
// ORT allocates each output from its pinned-host allocator once the run
// knows its shape (dynamic dimensions included), the device copies into
// it directly (DMA), and Run copies it once into Go memory it returns,
// then releases the pinned buffer back to ORT's allocator before it
// returns. So ORT owns the pinned buffers, only for the length of one Run;
// the caller owns the Go copy, which the batcher splits into rows by
// slicing, without copying again.
//
// onnxruntime_go v1.27.0 wraps neither BindOutputToDevice nor memory infos
// other than the CPU's, and its GetBoundOutputValues copies every output
// into Go values (mis-sizing FP16 and BF16, see outshape.go), so
// outbind_c.go makes those calls through the OrtApi table, on the binding
// onnxruntime_go created (bindingHandle). Its RunWithBinding takes no run
// options either, so the run itself goes through the OrtApi table too,
// with run options that max_run_time can terminate (runWithBinding).

// OutputBinding says where a session's outputs are put before they are
// copied into the Go memory Run returns.
type OutputBinding string

const (
	// OutputsOff ("" too) lets ORT allocate outputs in ordinary host
	// memory, or fills buffers this package preallocates.
	OutputsOff OutputBinding = "off"
	// OutputsPinned binds outputs to CUDA pinned host memory; it needs a
	// GPU session (Options.CUDA).
	OutputsPinned OutputBinding = "pinned"
	// outputsCPU binds outputs to ORT's CPU allocator: the same path as
	// OutputsPinned on any build, which lets tests run it without a GPU.
	outputsCPU OutputBinding = "cpu"
)

// ErrOutputBinding is wrapped by every error Open returns because
// Options.Outputs cannot be honoured, and by Run's when ONNX Runtime did
// not put an output in the memory it was bound to.
var ErrOutputBinding = errors.New("output binding not possible")

// ErrPinnedNeedsGPU matches an error from Open for OutputsPinned on a
// session without a GPU: pinned host memory is a CUDA allocator's, and
// the CPU provider's outputs are in host memory already.
var ErrPinnedNeedsGPU = errors.New("output_binding: pinned needs a GPU (CUDA) session")

// outputMemory is one session's output binding: the memory info its
// outputs are bound to.
type outputMemory struct {
	api  *unsafe.Pointer
	info unsafe.Pointer // OrtMemoryInfo, released by Session.Close
	name string         // the allocator name asked for
}

// newOutputMemory returns the binding for o (nil for OutputsOff), or why
// the session cannot have it.
func newOutputMemory(o Options, outputs []tensor.Spec) (*outputMemory, error) {
	var name string
	memType := 0 // OrtMemTypeDefault
	switch o.Outputs {
	case "", OutputsOff:
		return nil, nil
	case OutputsPinned:
		if !o.CUDA {
			return nil, fmt.Errorf("%w: %w: set output_binding: off for this model, or serve it on a GPU (infer.gpus)", ErrOutputBinding, ErrPinnedNeedsGPU)
		}
		name, memType = "CudaPinned", -1 // OrtMemTypeCPUOutput
	case outputsCPU:
		name = "Cpu"
	default:
		return nil, fmt.Errorf("%w: unknown output binding %q (want %q or %q)", ErrOutputBinding, o.Outputs, OutputsOff, OutputsPinned)
	}
	for _, out := range outputs {
		if out.DType == tensor.Bytes {
			return nil, fmt.Errorf("%w: output %q is STRING, which ONNX Runtime cannot put in %s memory (set output_binding: off for this model)", ErrOutputBinding, out.Name, name)
		}
	}
	api, err := loadedAPI()
	if err != nil {
		return nil, fmt.Errorf("%w: could not reach the ONNX Runtime C API: %w", ErrOutputBinding, err)
	}
	info, err := newMemoryInfo(api, name, memType)
	if err != nil {
		return nil, fmt.Errorf("%w: could not describe %s memory to ONNX Runtime: %w", ErrOutputBinding, name, err)
	}
	return &outputMemory{api: api, info: info, name: name}, nil
}

func (m *outputMemory) release() {
	if m != nil {
		releaseMemoryInfo(m.api, m.info)
	}
}

// runBinding runs the session with inputs ins (model order) bound as
// they are and every output bound to s.outMem, and returns the wanted
// outputs copied into Go memory. The run is terminated when ctx ends.
func (s *Session) runBinding(ctx context.Context, ins []onnxruntime.Value, want []int) ([]tensor.Tensor, error) {
	b, err := s.sess.CreateIoBinding()
	if err != nil {
		return nil, fmt.Errorf("could not create an I/O binding: %w", err)
	}
	defer b.Destroy()
	handle, err := bindingHandle(b)
	if err != nil {
		return nil, err
	}
	for i, v := range ins {
		if err := b.BindInput(s.meta.Inputs[i].Name, v); err != nil {
			return nil, fmt.Errorf("could not bind input %q: %w", s.meta.Inputs[i].Name, err)
		}
	}
	for _, o := range s.meta.Outputs {
		if err := bindOutputToDevice(s.outMem.api, handle, o.Name, s.outMem.info); err != nil {
			return nil, fmt.Errorf("could not bind output %q to %s memory: %w", o.Name, s.outMem.name, err)
		}
	}
	if err := s.runWithBinding(ctx, handle); err != nil {
		return nil, err
	}
	if err := syncBoundOutputs(s.outMem.api, handle); err != nil {
		return nil, fmt.Errorf("could not wait for the bound outputs: %w", err)
	}
	vals, release, err := boundValues(s.outMem.api, handle)
	defer release()
	if err != nil {
		return nil, fmt.Errorf("could not read the bound outputs: %w", err)
	}
	if len(vals) != len(s.meta.Outputs) {
		return nil, fmt.Errorf("ONNX Runtime returned %d bound outputs, the model has %d", len(vals), len(s.meta.Outputs))
	}
	result := make([]tensor.Tensor, len(want))
	for k, j := range want {
		if result[k], err = s.copyBound(vals[j], s.meta.Outputs[j]); err != nil {
			return nil, err
		}
	}
	return result, nil
}

// copyBound copies one bound output out of ORT's memory into Go memory:
// the one host copy of this path.
func (s *Session) copyBound(v unsafe.Pointer, spec tensor.Spec) (tensor.Tensor, error) {
	view, err := viewTensor(s.outMem.api, v)
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("output %q: %w", spec.Name, err)
	}
	if view.Memory != s.outMem.name {
		// The CPU build, bound to "CudaPinned", silently allocates from
		// its CPU allocator: say so rather than report a copy saved.
		return tensor.Tensor{}, fmt.Errorf("%w: output %q: ONNX Runtime put it in %q memory, not the %q it was bound to (this library has no %s allocator: use a GPU build of ONNX Runtime, or set output_binding: off)",
			ErrOutputBinding, spec.Name, view.Memory, s.outMem.name, s.outMem.name)
	}
	n := int(view.Count) * spec.DType.Size()
	data := alignedBytes(n)
	if n > 0 {
		copy(data, unsafe.Slice((*byte)(view.Data), n))
	}
	return tensor.Tensor{Name: spec.Name, DType: spec.DType, Shape: view.Shape, Data: data}, nil
}
