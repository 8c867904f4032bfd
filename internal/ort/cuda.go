package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

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
		"(scripts/fetch-ort gpu) with the CUDA 12 and cuDNN 9 libraries it needs, or set infer.gpus: [] to serve on the CPU"
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

// providerLibraries are the files ONNX Runtime loads, from the directory of
// libonnxruntime.so, to start a provider it builds as a shared library.
var providerLibraries = map[string][]string{
	ProviderCUDA:     {"libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"},
	ProviderTensorRT: {"libonnxruntime_providers_shared.so", "libonnxruntime_providers_tensorrt.so"},
}

// CheckProvider says, without a GPU, whether the library at libPath could
// start provider: it must be among available (AvailableProviders) and, for
// CUDA and TensorRT, have its provider libraries next to libPath. The
// onnxruntime-node CPU build lists CUDA and TensorRT but ships neither
// library, so the list alone says nothing. nil does not promise that the
// CUDA, cuDNN or TensorRT libraries load: only opening a session does.
func CheckProvider(libPath string, available []string, provider string) error {
	if !slices.Contains(available, provider) {
		return &ProviderError{provider, "find it in the library", fmt.Errorf("%q lists only %v", libPath, available)}
	}
	for _, name := range providerLibraries[provider] {
		p := filepath.Join(filepath.Dir(libPath), name)
		if _, err := os.Stat(p); err != nil {
			return &ProviderError{provider, "find its library", err} // err names p
		}
	}
	return nil
}
