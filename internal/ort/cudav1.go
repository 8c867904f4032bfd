package ort

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ortapi.h"

// The V1 provider option structs, as onnxruntime_c_api.h declares them
// (OrtCUDAProviderOptions, OrtTensorRTProviderOptions). ONNX Runtime froze
// both ("the legacy struct, don't add new fields here"), so their layout
// is the same in every library that serves API version 24.
typedef struct {
	int device_id;
	int cudnn_conv_algo_search; // OrtCudnnConvAlgoSearch: EXHAUSTIVE 0, HEURISTIC 1, DEFAULT 2
	size_t gpu_mem_limit;
	int arena_extend_strategy; // kNextPowerOfTwo 0, kSameAsRequested 1
	int do_copy_in_default_stream;
	int has_user_compute_stream;
	void *user_compute_stream;
	void *default_memory_arena_cfg;
	int tunable_op_enable;
	int tunable_op_tuning_enable;
	int tunable_op_max_tuning_duration_ms;
} cudaOptionsV1;

typedef struct {
	int device_id;
	int has_user_compute_stream;
	void *user_compute_stream;
	int trt_max_partition_iterations;
	int trt_min_subgraph_size;
	size_t trt_max_workspace_size;
	int trt_fp16_enable;
	int trt_int8_enable;
	const char *trt_int8_calibration_table_name;
	int trt_int8_use_native_calibration_table;
	int trt_dla_enable;
	int trt_dla_core;
	int trt_dump_subgraphs;
	int trt_engine_cache_enable;
	const char *trt_engine_cache_path;
	int trt_engine_decryption_enable;
	const char *trt_engine_decryption_lib_path;
	int trt_force_sequential_engine_build;
} tensorRTOptionsV1;

typedef void *(*appendV1Fn)(void *, const void *);

static char *appendCUDAV1(void **api, void *so, cudaOptionsV1 *o) {
	return ortStatusMessage(api, ((appendV1Fn)api[idxAppendCUDAV1])(so, o));
}

// loadError opens path as ONNX Runtime's provider bridge does and returns
// the loader's error (the first library it could not find), or NULL.
static char *loadError(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h) { dlclose(h); return NULL; }
	return strdup(dlerror());
}

static char *appendTensorRTV1(void **api, void *so, tensorRTOptionsV1 *o) {
	return ortStatusMessage(api, ((appendV1Fn)api[idxAppendTensorRTV1])(so, o));
}
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"unsafe"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// The CUDA and TensorRT provider options go to ONNX Runtime through one of
// two calls. The V2 ones (CreateCUDAProviderOptions and Update, what
// onnxruntime_go wraps) take every option by name, but only a library
// built with CUDA has them: the 1.29.0 core scripts/fetch-ort installs
// answers "CUDA execution provider is not enabled in this build". The V1
// calls (SessionOptionsAppendExecutionProvider_CUDA and _TensorRT, which
// take the frozen structs above) are in every build: the core loads
// libonnxruntime_providers_{shared,cuda,tensorrt}.so from its own
// directory through its provider bridge and hands them the struct. So
// appendCUDA and appendTensorRT try V2, and fall back to V1 when V2's
// options cannot be created. V1 carries every option the config has but
// two, refused with the reason: enable_cuda_graph (refused anyway,
// ErrCUDAGraph) and TensorRT's timing_cache.

// errNoV2Options is why an option only the V2 calls carry was refused.
var errNoV2Options = errors.New("this ONNX Runtime build offers only the V1 provider options, which lack it")

// cudaV1 is o as the V1 struct, on device 0.
func cudaV1(o CUDAOptions) (C.cudaOptionsV1, error) {
	v := C.cudaOptionsV1{gpu_mem_limit: C.SIZE_MAX, do_copy_in_default_stream: 1}
	if o.MemLimitBytes > 0 {
		v.gpu_mem_limit = C.size_t(o.MemLimitBytes)
	}
	switch o.ArenaExtendStrategy {
	case "", "kNextPowerOfTwo":
	case "kSameAsRequested":
		v.arena_extend_strategy = 1
	default:
		return v, fmt.Errorf("arena_extend_strategy %q is neither kNextPowerOfTwo nor kSameAsRequested", o.ArenaExtendStrategy)
	}
	switch o.CuDNNConvAlgoSearch {
	case "", "EXHAUSTIVE":
	case "HEURISTIC":
		v.cudnn_conv_algo_search = 1
	case "DEFAULT":
		v.cudnn_conv_algo_search = 2
	default:
		return v, fmt.Errorf("cudnn_conv_algo_search %q is none of EXHAUSTIVE, HEURISTIC, DEFAULT", o.CuDNNConvAlgoSearch)
	}
	if o.CopyInSeparateStream {
		v.do_copy_in_default_stream = 0
	}
	if o.CUDAGraph {
		return v, fmt.Errorf("enable_cuda_graph: %w (and it is refused anyway: %w)", errNoV2Options, ErrCUDAGraph)
	}
	return v, nil
}

// appendCUDAV1 adds the CUDA provider to so with the V1 call. v2 is why
// the V2 options could not be created, for the message.
func appendCUDAV1(so *onnxruntime.SessionOptions, o CUDAOptions, v2 error) error {
	step := fmt.Sprintf("set its options %v through the V1 call (V2: %v), which loads its provider library", o.providerKeys(), v2)
	v, err := cudaV1(o)
	if err != nil {
		return &ProviderError{ProviderCUDA, step, err}
	}
	api, handle, err := v1Handles(so)
	if err != nil {
		return &ProviderError{ProviderCUDA, step, err}
	}
	if err := cError(C.appendCUDAV1((*unsafe.Pointer)(api), handle, &v)); err != nil {
		return &ProviderError{ProviderCUDA, step, withLoadError(err, "libonnxruntime_providers_cuda.so")}
	}
	return nil
}

// appendTensorRTV1 adds the TensorRT provider to so with the V1 call.
func appendTensorRTV1(so *onnxruntime.SessionOptions, o TensorRTOptions, v2 error) error {
	step := fmt.Sprintf("set its options %v through the V1 call (V2: %v), which loads its provider library", o.providerKeys(), v2)
	if o.TimingCache {
		return &ProviderError{ProviderTensorRT, step, fmt.Errorf("timing_cache: %w (turn timing_cache off)", errNoV2Options)}
	}
	// ONNX Runtime's defaults for the fields the config does not set.
	v := C.tensorRTOptionsV1{trt_max_partition_iterations: 1000, trt_min_subgraph_size: 1,
		trt_max_workspace_size: C.size_t(o.MaxWorkspaceBytes)}
	if o.FP16 {
		v.trt_fp16_enable = 1
	}
	if o.EngineCacheDir != "" {
		path := C.CString(o.EngineCacheDir)
		defer C.free(unsafe.Pointer(path))
		v.trt_engine_cache_enable, v.trt_engine_cache_path = 1, path
	}
	api, handle, err := v1Handles(so)
	if err != nil {
		return &ProviderError{ProviderTensorRT, step, err}
	}
	if err := cError(C.appendTensorRTV1((*unsafe.Pointer)(api), handle, &v)); err != nil {
		return &ProviderError{ProviderTensorRT, step, withLoadError(err, "libonnxruntime_providers_tensorrt.so")}
	}
	return nil
}

// v1Handles returns the loaded library's OrtApi and so's OrtSessionOptions.
func v1Handles(so *onnxruntime.SessionOptions) (*unsafe.Pointer, unsafe.Pointer, error) {
	api, err := loadedAPI()
	if err != nil {
		return nil, nil, err
	}
	h, err := cHandle(so, "OrtSessionOptions", "o")
	return api, h, err
}

// withLoadError adds to err, the V1 call's "Failed to load shared
// library" (ONNX Runtime logs the reason but does not return it), what
// the loader says when this process opens the provider libraries from the
// directory of the ONNX Runtime library as ONNX Runtime does: the first
// library it could not find, such as "libcublasLt.so.13: cannot open
// shared object file".
func withLoadError(err error, provider string) error {
	environment.mu.Lock()
	dir := filepath.Dir(environment.path)
	environment.mu.Unlock()
	for _, name := range []string{"libonnxruntime_providers_shared.so", provider} {
		cPath := C.CString(filepath.Join(dir, name))
		msg := C.loadError(cPath)
		C.free(unsafe.Pointer(cPath))
		if msg != nil {
			return fmt.Errorf("%w: %w", err, cError(msg))
		}
	}
	return err
}
