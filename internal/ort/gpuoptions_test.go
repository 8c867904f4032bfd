package ort

import (
	"maps"
	"testing"
)

// TestProviderKeys: each option reaches ONNX Runtime under its own key and
// in its own spelling; the zero value is ORT's defaults on device 0.
func TestProviderKeys(t *testing.T) {
	cases := []struct {
		name string
		got  map[string]string
		want map[string]string
	}{
		{"cuda zero", CUDAOptions{}.providerKeys(),
			map[string]string{"device_id": "0", "do_copy_in_default_stream": "1", "enable_cuda_graph": "0"}},
		{"cuda all", CUDAOptions{MemLimitBytes: 2 << 30, ArenaExtendStrategy: "kSameAsRequested",
			CuDNNConvAlgoSearch: "HEURISTIC", CopyInSeparateStream: true, CUDAGraph: true}.providerKeys(),
			map[string]string{"device_id": "0", "gpu_mem_limit": "2147483648", "arena_extend_strategy": "kSameAsRequested",
				"cudnn_conv_algo_search": "HEURISTIC", "do_copy_in_default_stream": "0", "enable_cuda_graph": "1"}},
		{"tensorrt zero", TensorRTOptions{Enable: true}.providerKeys(),
			map[string]string{"device_id": "0", "trt_fp16_enable": "0"}},
		{"tensorrt all", TensorRTOptions{Enable: true, FP16: true, EngineCacheDir: "/var/lib/supervisor/trt-engines",
			MaxWorkspaceBytes: 1 << 30, TimingCache: true}.providerKeys(),
			map[string]string{"device_id": "0", "trt_fp16_enable": "1", "trt_engine_cache_enable": "1",
				"trt_engine_cache_path": "/var/lib/supervisor/trt-engines", "trt_max_workspace_size": "1073741824",
				"trt_timing_cache_enable": "1", "trt_timing_cache_path": "/var/lib/supervisor/trt-engines"}},
	}
	for _, c := range cases {
		if !maps.Equal(c.got, c.want) {
			t.Errorf("%s: providerKeys() = %v; want %v", c.name, c.got, c.want)
		}
	}
}
