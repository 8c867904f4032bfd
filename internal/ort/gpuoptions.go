package ort

import (
	"strconv"
)

// GPUOptions tune the GPU execution providers of a session that runs on a
// GPU (Options.CUDA). The zero value is the CUDA provider with ONNX
// Runtime's defaults, and no TensorRT. Field values are ONNX Runtime's own
// (the config turns an operator's words into them), so they pass through
// unchanged to the provider options' Update.
type GPUOptions struct {
	CUDA     CUDAOptions     `json:"cuda"`
	TensorRT TensorRTOptions `json:"tensorrt"`
}

// CUDAOptions are the CUDA execution provider's settings.
type CUDAOptions struct {
	// MemLimitBytes bounds the device memory arena (gpu_mem_limit); 0
	// means ONNX Runtime's default, no limit.
	MemLimitBytes int64 `json:"gpu_mem_limit,omitempty"`
	// ArenaExtendStrategy is "kNextPowerOfTwo" or "kSameAsRequested"; ""
	// means ONNX Runtime's default (kNextPowerOfTwo).
	ArenaExtendStrategy string `json:"arena_extend_strategy,omitempty"`
	// CuDNNConvAlgoSearch is "EXHAUSTIVE", "HEURISTIC" or "DEFAULT"; ""
	// means ONNX Runtime's default (EXHAUSTIVE).
	CuDNNConvAlgoSearch string `json:"cudnn_conv_algo_search,omitempty"`
	// CopyInSeparateStream turns do_copy_in_default_stream off (ORT's
	// default is on); named for the non-default so the zero value is ORT's.
	CopyInSeparateStream bool `json:"copy_in_separate_stream,omitempty"`
	// CUDAGraph captures the model into a CUDA graph on the first run
	// (enable_cuda_graph); it needs fixed input shapes and addresses,
	// which Run does not give, so Open refuses it (ErrCUDAGraph).
	CUDAGraph bool `json:"enable_cuda_graph,omitempty"`
}

// TensorRTOptions are the TensorRT execution provider's settings. With
// Enable, TensorRT takes the nodes it can, CUDA the rest, then the CPU:
// ONNX Runtime tries providers in the order they were appended.
type TensorRTOptions struct {
	Enable bool `json:"enable,omitempty"`
	// FP16 lets TensorRT build engines in half precision (trt_fp16_enable).
	FP16 bool `json:"fp16,omitempty"`
	// EngineCacheDir keeps built engines across restarts
	// (trt_engine_cache_path); "" turns the engine cache off, so every
	// worker start rebuilds them (minutes for a large model).
	EngineCacheDir string `json:"engine_cache_dir,omitempty"`
	// MaxWorkspaceBytes bounds TensorRT's scratch memory
	// (trt_max_workspace_size); 0 means ONNX Runtime's default.
	MaxWorkspaceBytes int64 `json:"max_workspace_bytes,omitempty"`
	// TimingCache keeps layer timings in EngineCacheDir
	// (trt_timing_cache_enable), which speeds up building engines for
	// other models with similar layers.
	TimingCache bool `json:"timing_cache,omitempty"`
}

// providerKeys returns the CUDA provider's option map for Update, on
// device 0: the worker's own GPU (see appendCUDA).
func (o CUDAOptions) providerKeys() map[string]string {
	m := map[string]string{"device_id": "0"}
	if o.MemLimitBytes > 0 {
		m["gpu_mem_limit"] = strconv.FormatInt(o.MemLimitBytes, 10)
	}
	if o.ArenaExtendStrategy != "" {
		m["arena_extend_strategy"] = o.ArenaExtendStrategy
	}
	if o.CuDNNConvAlgoSearch != "" {
		m["cudnn_conv_algo_search"] = o.CuDNNConvAlgoSearch
	}
	m["do_copy_in_default_stream"] = flag(!o.CopyInSeparateStream)
	m["enable_cuda_graph"] = flag(o.CUDAGraph)
	return m
}

// providerKeys returns the TensorRT provider's option map for Update, on
// device 0.
func (o TensorRTOptions) providerKeys() map[string]string {
	m := map[string]string{"device_id": "0", "trt_fp16_enable": flag(o.FP16)}
	if o.EngineCacheDir != "" {
		m["trt_engine_cache_enable"] = "1"
		m["trt_engine_cache_path"] = o.EngineCacheDir
	}
	if o.MaxWorkspaceBytes > 0 {
		m["trt_max_workspace_size"] = strconv.FormatInt(o.MaxWorkspaceBytes, 10)
	}
	if o.TimingCache {
		m["trt_timing_cache_enable"] = "1"
		if o.EngineCacheDir != "" {
			m["trt_timing_cache_path"] = o.EngineCacheDir
		}
	}
	return m
}

// flag is ONNX Runtime's spelling of a boolean provider option.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
