package ort

import (
	"errors"
	"fmt"
	"sync"

	onnxruntime "github.com/yalue/onnxruntime_go"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Platform is the Metadata.Platform of every model this package serves, as
// Triton and KServe name ONNX Runtime.
const Platform = "onnxruntime_onnx"

// ErrClosed is returned by Run on a closed Session.
var ErrClosed = errors.New("ort: session is closed")

// Options tune a Session's thread pools.
type Options struct {
	// IntraOpThreads is the number of threads one operator may use. 0 means
	// ORT's default: one per physical core. A server running one worker per
	// core wants 1.
	IntraOpThreads int
	// InterOpThreads is the number of threads running independent operators
	// in parallel; ORT only uses it in parallel execution mode. 0 means ORT's
	// default.
	InterOpThreads int
	// CUDA runs the session on CUDA device 0 through the CUDA execution
	// provider, the CPU provider taking what CUDA cannot run. Open fails
	// with a *ProviderError (ErrNoCUDA) when the library or the machine
	// has no CUDA. Wrap everything from Init to the warm-up runs in
	// KeepGoSignalHandlers.
	CUDA bool
	// GPU tunes the CUDA provider and may put TensorRT ahead of it; it is
	// ignored unless CUDA is set. Open refuses GPU.CUDA.CUDAGraph
	// (ErrCUDAGraph).
	GPU GPUOptions
	// Outputs is where ORT puts outputs before Run copies them into Go
	// memory (outbind.go); "" means OutputsOff. OutputsPinned needs CUDA.
	Outputs OutputBinding
}

// Session is one loaded model. Run may be called from many goroutines at
// once; Close waits for running calls to return.
type Session struct {
	name string
	meta tensor.Metadata

	inputIndex  map[string]int // model input name → position in meta.Inputs
	outputIndex map[string]int // model output name → position in meta.Outputs
	// outPlans has one entry per model output: nil lets ORT allocate the
	// output, non-nil says how to preallocate it (see outshape.go).
	outPlans []*outPlan
	// outMem, when set, is the memory every output is bound to instead
	// (Options.Outputs, outbind.go); outPlans are then unused.
	outMem *outputMemory

	mu   sync.RWMutex // Run holds it shared, Close exclusively
	sess *onnxruntime.DynamicAdvancedSession
}

// Open loads the ONNX model at modelPath. name is the model's name in the
// returned Metadata. Init must have succeeded first. Open fails, naming the
// input or output, if the model has one the pipeline cannot carry: a
// non-tensor value, an unsupported element type such as complex, or an FP16,
// BF16 or STRING scalar.
func Open(modelPath, name string, opts Options) (*Session, error) {
	if !onnxruntime.IsInitialized() {
		return nil, fmt.Errorf("could not open model %q from %q: ort.Init has not succeeded", name, modelPath)
	}
	so, err := newSessionOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("could not open model %q from %q: %w", name, modelPath, err)
	}
	defer so.Destroy()

	ins, outs, err := onnxruntime.GetInputOutputInfoWithOptions(modelPath, so)
	if err != nil {
		return nil, fmt.Errorf("could not load model %q from %q: %w", name, modelPath, err)
	}
	s := &Session{name: name, meta: tensor.Metadata{Name: name, Platform: Platform}}
	if s.meta.Inputs, s.inputIndex, err = specsOf("input", ins); err != nil {
		return nil, fmt.Errorf("model %q (%q): %w", name, modelPath, err)
	}
	if s.meta.Outputs, s.outputIndex, err = specsOf("output", outs); err != nil {
		return nil, fmt.Errorf("model %q (%q): %w", name, modelPath, err)
	}
	if err := s.planOutputMemory(modelPath, opts); err != nil {
		return nil, fmt.Errorf("model %q (%q): %w", name, modelPath, err)
	}
	s.sess, err = onnxruntime.NewDynamicAdvancedSession(modelPath,
		specNames(s.meta.Inputs), specNames(s.meta.Outputs), so)
	if err != nil {
		s.outMem.release()
		return nil, fmt.Errorf("could not create ONNX Runtime session for model %q from %q: %w", name, modelPath, err)
	}
	return s, nil
}

// planOutputMemory decides where Run puts the outputs: bound to
// opts.Outputs' memory, which ORT allocates once it knows their shapes, or
// else preallocated where onnxruntime_go needs it (outshape.go,
// noinputs.go), which needs their shapes before the run.
func (s *Session) planOutputMemory(modelPath string, opts Options) error {
	var err error
	if s.outMem, err = newOutputMemory(opts, s.meta.Outputs); err != nil || s.outMem != nil {
		return err
	}
	if len(s.meta.Inputs) == 0 {
		if err := checkNoInputs(s.meta.Outputs); err != nil {
			return err
		}
	}
	s.outPlans, err = planOutputs(modelPath, s.meta)
	return err
}

// newSessionOptions turns Options into ORT session options. The caller
// destroys them.
func newSessionOptions(opts Options) (*onnxruntime.SessionOptions, error) {
	so, err := onnxruntime.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("could not create session options: %w", err)
	}
	if opts.IntraOpThreads > 0 {
		err = so.SetIntraOpNumThreads(opts.IntraOpThreads)
	}
	if err == nil && opts.InterOpThreads > 0 {
		err = so.SetInterOpNumThreads(opts.InterOpThreads)
	}
	if err != nil {
		so.Destroy()
		return nil, fmt.Errorf("could not set thread counts %+v: %w", opts, err)
	}
	if opts.CUDA {
		if err := appendGPU(so, opts.GPU); err != nil {
			so.Destroy()
			return nil, err
		}
	}
	return so, nil
}

// specsOf converts ORT's input or output descriptions to Specs.
func specsOf(kind string, infos []onnxruntime.InputOutputInfo) ([]tensor.Spec, map[string]int, error) {
	specs := make([]tensor.Spec, len(infos))
	index := make(map[string]int, len(infos))
	for i, info := range infos {
		if info.OrtValueType != onnxruntime.ONNXTypeTensor {
			return nil, nil, fmt.Errorf("%s %q is a %s, not a tensor", kind, info.Name, info.OrtValueType)
		}
		dt, ok := dtypeOf(info.DataType)
		if !ok {
			return nil, nil, fmt.Errorf("%s %q has element type %s, which the server does not support", kind, info.Name, info.DataType)
		}
		if len(info.Dimensions) == 0 && (dt == tensor.FP16 || dt == tensor.BF16 || dt == tensor.Bytes) {
			// Scalars go through onnxruntime_go's Scalar[T] (scalar.go),
			// which has no 16-bit float or string type.
			return nil, nil, fmt.Errorf("%s %q is a %s scalar (rank 0), which the server does not support (other element types are)", kind, info.Name, dt)
		}
		shape := make([]int64, len(info.Dimensions)) // [] (not null) for a scalar
		copy(shape, info.Dimensions)
		specs[i] = tensor.Spec{Name: info.Name, DType: dt, Shape: shape}
		index[info.Name] = i
	}
	return specs, index, nil
}

func specNames(specs []tensor.Spec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

// Metadata describes the model's inputs and outputs, in model order, with -1
// for dynamic dimensions. The caller may modify the copy it gets.
func (s *Session) Metadata() tensor.Metadata {
	m := s.meta
	m.Inputs = cloneSpecs(m.Inputs)
	m.Outputs = cloneSpecs(m.Outputs)
	return m
}

func cloneSpecs(specs []tensor.Spec) []tensor.Spec {
	out := make([]tensor.Spec, len(specs))
	for i, sp := range specs {
		sp.Shape = append([]int64(nil), sp.Shape...)
		out[i] = sp
	}
	return out
}

// Close releases the ORT session after any running calls return. Later Runs
// fail with ErrClosed; closing twice is harmless.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return nil
	}
	err := s.sess.Destroy()
	s.sess = nil
	s.outMem.release()
	s.outMem = nil
	if err != nil {
		return fmt.Errorf("could not close model %q: %w", s.name, err)
	}
	return nil
}
