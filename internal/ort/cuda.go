package ort

import (
	"errors"
	"fmt"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// ErrNoCUDA is wrapped when a session asks for the CUDA execution provider
// and the loaded ONNX Runtime library or the machine cannot give it: a
// CPU-only build of the library, no driver, no device.
var ErrNoCUDA = errors.New("the CUDA execution provider is not available")

// cudaHint tells an operator what to change.
const cudaHint = "this infer worker was given a GPU: point onnxruntime_library at a GPU build of ONNX Runtime " +
	"with the CUDA and cuDNN libraries it needs, or set infer.gpus: [] to serve on the CPU"

// appendCUDA adds the CUDA execution provider on device 0 to so, ahead of
// the CPU provider, which still runs what CUDA cannot. Device 0 is the
// worker's own GPU: the master exports CUDA_VISIBLE_DEVICES=<its UUID>, so
// the worker sees that one device only and numbering cannot go wrong.
//
// The CUDA libraries may install signal handlers when they initialise
// here or in the first runs; see KeepGoSignalHandlers.
func appendCUDA(so *onnxruntime.SessionOptions) error {
	cuda, err := onnxruntime.NewCUDAProviderOptions()
	if err != nil {
		return fmt.Errorf("%w: %v (%s)", ErrNoCUDA, err, cudaHint)
	}
	defer cuda.Destroy()
	if err := cuda.Update(map[string]string{"device_id": "0"}); err != nil {
		return fmt.Errorf("%w: could not select CUDA device 0: %v (%s)", ErrNoCUDA, err, cudaHint)
	}
	if err := so.AppendExecutionProviderCUDA(cuda); err != nil {
		return fmt.Errorf("%w: %v (%s)", ErrNoCUDA, err, cudaHint)
	}
	return nil
}
