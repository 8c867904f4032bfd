package ort

import (
	"errors"
	"fmt"
	"os"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// ErrProviderUnavailable is wrapped by every *ProviderError: the session
// asked for an execution provider that the loaded ONNX Runtime library or
// the machine cannot give (a CPU-only build, missing CUDA, cuDNN or
// TensorRT libraries, no driver, no device).
var ErrProviderUnavailable = errors.New("execution provider not available in this ONNX Runtime build or on this machine")

// ErrNoCUDA and ErrNoTensorRT match a *ProviderError for that provider.
var (
	ErrNoCUDA     = errors.New("the CUDA execution provider is not available")
	ErrNoTensorRT = errors.New("the TensorRT execution provider is not available")
)

// ProviderError is why a GPU execution provider could not be added to a
// session, or (CheckProvider) could not be.
type ProviderError struct {
	Provider string // ProviderCUDA or ProviderTensorRT
	Step     string // what failed, e.g. "set its options"
	Err      error  // ONNX Runtime's error, or the missing file
}

func (e *ProviderError) Error() string {
	hint := "this infer worker was given a GPU: point onnxruntime_library at a GPU build of ONNX Runtime " +
		"(scripts/fetch-ort gpu) with the CUDA 13 and cuDNN 9 libraries it needs (`supervisor check` says which are missing), or set infer.gpus: [] to serve on the CPU"
	if e.Provider == ProviderTensorRT {
		hint = "turn providers.tensorrt.enable off for this model, or install TensorRT 10 next to a GPU build of ONNX Runtime"
	}
	return fmt.Sprintf("%s is not available: could not %s: %v (%s)", e.Provider, e.Step, e.Err, hint)
}

// Is matches ErrProviderUnavailable, and ErrNoCUDA or ErrNoTensorRT by
// provider.
func (e *ProviderError) Is(target error) bool {
	return target == ErrProviderUnavailable ||
		target == ErrNoCUDA && e.Provider == ProviderCUDA ||
		target == ErrNoTensorRT && e.Provider == ProviderTensorRT
}

func (e *ProviderError) Unwrap() error { return e.Err }

// appendGPU adds TensorRT (when enabled) then CUDA to so, ahead of the CPU
// provider, which still runs what neither can: ONNX Runtime offers each
// node to the providers in the order they were appended. Device 0 is the
// worker's own GPU: the master exports CUDA_VISIBLE_DEVICES=<its UUID>, so
// the worker sees that one device only and numbering cannot go wrong.
//
// The CUDA libraries may install signal handlers when they initialise
// here or in the first runs; see KeepGoSignalHandlers.
func appendGPU(so *onnxruntime.SessionOptions, o GPUOptions) error {
	if err := checkCUDAGraph(o.CUDA); err != nil {
		return err
	}
	if o.TensorRT.Enable {
		if err := appendTensorRT(so, o.TensorRT); err != nil {
			return err
		}
	}
	return appendCUDA(so, o.CUDA)
}

// appendCUDA adds CUDA with the V2 options where the library has them,
// else with the V1 call (cudav1.go).
func appendCUDA(so *onnxruntime.SessionOptions, o CUDAOptions) error {
	err := appendProvider(ProviderCUDA, o.providerKeys(), onnxruntime.NewCUDAProviderOptions, so.AppendExecutionProviderCUDA)
	if v2, ok := noV2(err); ok {
		return appendCUDAV1(so, o, v2)
	}
	return err
}

func appendTensorRT(so *onnxruntime.SessionOptions, o TensorRTOptions) error {
	if o.EngineCacheDir != "" {
		if err := os.MkdirAll(o.EngineCacheDir, 0o750); err != nil {
			return &ProviderError{ProviderTensorRT, "create its engine cache directory", err}
		}
	}
	err := appendProvider(ProviderTensorRT, o.providerKeys(), onnxruntime.NewTensorRTProviderOptions, so.AppendExecutionProviderTensorRT)
	if v2, ok := noV2(err); ok {
		return appendTensorRTV1(so, o, v2)
	}
	return err
}

// stepCreate is the step of a *ProviderError whose V2 options could not
// be created: the library was built without that provider.
const stepCreate = "create its options"

// noV2 says whether err is appendProvider's failure to create the V2
// options, and returns ONNX Runtime's reason.
func noV2(err error) (error, bool) {
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Step == stepCreate {
		return pe.Err, true
	}
	return nil, false
}

// providerOptions are onnxruntime_go's CUDA and TensorRT provider options.
type providerOptions interface {
	Update(map[string]string) error
	Destroy() error
}

// appendProvider creates provider's options, sets keys and adds them to
// the session options with add; every failure is a *ProviderError.
func appendProvider[T providerOptions](provider string, keys map[string]string, create func() (T, error), add func(T) error) error {
	opts, err := create()
	if err != nil {
		return &ProviderError{provider, stepCreate, err}
	}
	defer opts.Destroy()
	if err := opts.Update(keys); err != nil {
		return &ProviderError{provider, fmt.Sprintf("set its options %v", keys), err}
	}
	if err := add(opts); err != nil {
		return &ProviderError{provider, "add it to the session", err}
	}
	return nil
}

// TryProvider adds provider, with ONNX Runtime's default options, to
// throwaway session options: as for a worker's session, ONNX Runtime
// loads the provider library and, through it, the CUDA, cuDNN or TensorRT
// libraries it links, so the error (a *ProviderError) names the first one
// the loader could not find. It needs neither a model nor a device: nil
// says the libraries load, not that a GPU is there. Init must have
// succeeded.
func TryProvider(provider string) error {
	if !onnxruntime.IsInitialized() {
		return errors.New("ort.Init has not succeeded")
	}
	so, err := onnxruntime.NewSessionOptions()
	if err != nil {
		return fmt.Errorf("could not create session options: %w", err)
	}
	defer so.Destroy()
	restore := KeepGoSignalHandlers()
	defer restore()
	switch provider {
	case ProviderCUDA:
		return appendCUDA(so, CUDAOptions{})
	case ProviderTensorRT:
		return appendTensorRT(so, TensorRTOptions{Enable: true})
	}
	return fmt.Errorf("TryProvider: %q is neither %s nor %s", provider, ProviderCUDA, ProviderTensorRT)
}
