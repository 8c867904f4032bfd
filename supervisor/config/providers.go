package config

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/supervisor-dev/supervisor/internal/ort"
)

// ProvidersConfig tunes the GPU execution providers of the sessions an
// infer worker with a GPU opens (infer.gpus); CPU workers ignore it.
// infer.providers is every model's default, and a model's own providers
// section replaces it as a whole (keys it leaves out take the defaults
// below, not infer.providers'). ONNX Runtime offers each node to TensorRT
// (when enabled), then CUDA, then the CPU.
type ProvidersConfig struct {
	CUDA     CUDAConfig     `yaml:"cuda"`
	TensorRT TensorRTConfig `yaml:"tensorrt"`
}

// CUDAConfig is the CUDA execution provider's options, named and spelled
// as ONNX Runtime's documentation does, so that its advice applies as is.
type CUDAConfig struct {
	// GPUMemLimit bounds the CUDA memory arena per session; 0 means no limit.
	GPUMemLimit ByteSize `yaml:"gpu_mem_limit"`
	// ArenaExtendStrategy is kNextPowerOfTwo or kSameAsRequested; "" is
	// ONNX Runtime's default (kNextPowerOfTwo).
	ArenaExtendStrategy string `yaml:"arena_extend_strategy"`
	// CuDNNConvAlgoSearch is EXHAUSTIVE, HEURISTIC or DEFAULT; "" is ONNX
	// Runtime's default (EXHAUSTIVE).
	CuDNNConvAlgoSearch   string `yaml:"cudnn_conv_algo_search"`
	DoCopyInDefaultStream bool   `yaml:"do_copy_in_default_stream"`
	// EnableCUDAGraph would capture a model's runs into a CUDA graph.
	// Validation refuses true: ONNX Runtime replays the graph on its first
	// run's buffers and shapes, and the infer worker's runs bring new
	// buffers each time (ort.ErrCUDAGraph). The key stays so that a config
	// written from ONNX Runtime's documentation is told why, at its line.
	EnableCUDAGraph bool `yaml:"enable_cuda_graph"`
}

// TensorRTConfig is the TensorRT execution provider's options.
type TensorRTConfig struct {
	Enable bool `yaml:"enable"`
	FP16   bool `yaml:"fp16"`
	// EngineCacheDir keeps built engines across worker restarts; relative
	// paths are from the master's working directory (the state directory,
	// /var/lib/onnx-supervisor, under the systemd unit); "none" turns it off.
	EngineCacheDir string `yaml:"engine_cache_dir"`
	// MaxWorkspace bounds TensorRT's scratch memory; 0 is ORT's default.
	MaxWorkspace ByteSize `yaml:"max_workspace"`
	// TimingCache keeps layer timings in EngineCacheDir.
	TimingCache bool `yaml:"timing_cache"`
}

// engineCacheOff is the engine_cache_dir that turns the cache off.
const engineCacheOff = "none"

// The values ONNX Runtime accepts; "" keeps its default.
var (
	arenaExtendStrategies = []string{"", "kNextPowerOfTwo", "kSameAsRequested"}
	cudnnConvAlgoSearches = []string{"", "EXHAUSTIVE", "HEURISTIC", "DEFAULT"}
)

// DefaultProviders returns the providers section a model or infer pool has
// when the file leaves it out: CUDA with ONNX Runtime's defaults, TensorRT
// off, its engine cache under "trt-engines" should it be turned on.
func DefaultProviders() ProvidersConfig {
	return ProvidersConfig{
		CUDA:     CUDAConfig{DoCopyInDefaultStream: true},
		TensorRT: TensorRTConfig{EngineCacheDir: "trt-engines"},
	}
}

// modelProviders decodes a model's providers section over DefaultProviders.
func (d *configDecoder) modelProviders(dst **ProvidersConfig) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		p := DefaultProviders()
		*dst = &p
		d.mapping(n, field, d.fieldKeys(&p))
	}
}

// providers validates a providers section; field is its path, such as
// "models[1].providers". nil (a model without one) is always valid.
func (v *configValidator) providers(field string, p *ProvidersConfig) {
	if p == nil {
		return
	}
	if p.CUDA.GPUMemLimit < 0 {
		v.errorf(field+".cuda.gpu_mem_limit", "%s is negative (use 0 for no limit, or e.g. 8GiB)", p.CUDA.GPUMemLimit)
	}
	v.oneOf(field+".cuda.arena_extend_strategy", p.CUDA.ArenaExtendStrategy, arenaExtendStrategies)
	v.oneOf(field+".cuda.cudnn_conv_algo_search", p.CUDA.CuDNNConvAlgoSearch, cudnnConvAlgoSearches)
	if p.CUDA.EnableCUDAGraph {
		// Refused for every model, batching or not, fixed shapes or not:
		// the infer worker's runs never keep their buffers (ort.ErrCUDAGraph).
		v.errorf(field+".cuda.enable_cuda_graph", "true is refused: %v (set enable_cuda_graph: false)", ort.ErrCUDAGraph)
	}
	if p.TensorRT.EngineCacheDir == "" {
		v.errorf(field+".tensorrt.engine_cache_dir", "is empty (give a directory, or %q to turn the engine cache off)", engineCacheOff)
	}
	if p.TensorRT.MaxWorkspace < 0 {
		v.errorf(field+".tensorrt.max_workspace", "%s is negative (use 0 for ONNX Runtime's default, or e.g. 2GiB)", p.TensorRT.MaxWorkspace)
	}
	if p.TensorRT.TimingCache && p.TensorRT.EngineCacheDir == engineCacheOff {
		v.errorf(field+".tensorrt.timing_cache", "needs engine_cache_dir, where the timing cache is kept (set one, or timing_cache: false)")
	}
}

// oneOf reports a value outside allowed (whose "" means "leave it out").
func (v *configValidator) oneOf(field, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		v.errorf(field, "%q is not one of %s (ONNX Runtime's spelling; leave it out for its default)",
			value, strings.Join(allowed[1:], ", "))
	}
}

// ORT is the section as ONNX Runtime's options, for the infer workers.
func (p ProvidersConfig) ORT() ort.GPUOptions {
	cache := p.TensorRT.EngineCacheDir
	if cache == engineCacheOff {
		cache = ""
	}
	return ort.GPUOptions{
		CUDA: ort.CUDAOptions{
			MemLimitBytes:        int64(p.CUDA.GPUMemLimit),
			ArenaExtendStrategy:  p.CUDA.ArenaExtendStrategy,
			CuDNNConvAlgoSearch:  p.CUDA.CuDNNConvAlgoSearch,
			CopyInSeparateStream: !p.CUDA.DoCopyInDefaultStream,
			CUDAGraph:            p.CUDA.EnableCUDAGraph,
		},
		TensorRT: ort.TensorRTOptions{
			Enable: p.TensorRT.Enable, FP16: p.TensorRT.FP16, EngineCacheDir: cache,
			MaxWorkspaceBytes: int64(p.TensorRT.MaxWorkspace), TimingCache: p.TensorRT.TimingCache,
		},
	}
}

// ModelProviders is the providers section model m runs with: its own, or
// infer.providers.
func (c *Config) ModelProviders(m ModelConfig) ProvidersConfig {
	if m.Providers != nil {
		return *m.Providers
	}
	return c.Infer.Providers
}
