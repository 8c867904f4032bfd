package ort_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
)

// TestGPUUnavailable: with the CPU build of ONNX Runtime (what `make
// setup` fetches), a session that asks for CUDA, with each GPU option set
// in turn or TensorRT in front, fails with a *ProviderError naming the
// provider and what to do, instead of crashing or silently running on the
// CPU. It fails as far along as this build lets it: the provider's options
// are created and each option reaches ONNX Runtime under its key, which
// then cannot load the provider library. With a GPU build on a GPU host
// the sessions open (the test skips).
func TestGPUUnavailable(t *testing.T) {
	orttest.Init(t)
	path := mlpFile(t)
	cache := filepath.Join(t.TempDir(), "trt-engines")
	lib, err := ort.FindLibrary()
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(lib), "libonnxruntime_providers_shared.so"))
	cpuBuild := errors.Is(err, os.ErrNotExist)
	for _, c := range gpuOptionCases(cache) {
		restore := ort.KeepGoSignalHandlers()
		s, err := ort.Open(path, "mlp", ort.Options{IntraOpThreads: 1, CUDA: true, GPU: c.gpu})
		restore()
		if err == nil {
			s.Close()
			t.Skipf("%s: this ONNX Runtime library has a working GPU provider", c.name)
		}
		var pe *ort.ProviderError
		if !errors.As(err, &pe) || !errors.Is(err, c.want) || !errors.Is(err, ort.ErrProviderUnavailable) ||
			!strings.Contains(err.Error(), `model "mlp"`) || !strings.Contains(err.Error(), c.provider) {
			t.Errorf("%s: Open on a CPU-only library: %v; want a *ProviderError matching %v, naming the model and %s", c.name, err, c.want, c.provider)
			continue
		}
		// The options were created, and ONNX Runtime was handed each key:
		// the CPU build fails only when it must load the provider library.
		if !cpuBuild {
			continue
		}
		if !strings.HasPrefix(pe.Step, "set its options") {
			t.Errorf("%s: failed at %q; want the provider's options created and refused when set", c.name, pe.Step)
		}
		for _, k := range c.keys {
			if !strings.Contains(pe.Step, k) {
				t.Errorf("%s: the options set (%s) lack %s", c.name, pe.Step, k)
			}
		}
	}
	if _, err := os.Stat(cache); err != nil {
		t.Errorf("the TensorRT engine cache directory was not created before TensorRT was asked: %v", err)
	}
}

// TestOpenRefusesCUDAGraph: a session on a GPU asking for CUDA graphs,
// alone or behind TensorRT, is refused with ErrCUDAGraph and what to
// change, before any provider is asked: the same on the CPU build as on a
// GPU host, and without the TensorRT engine cache directory being made.
func TestOpenRefusesCUDAGraph(t *testing.T) {
	orttest.Init(t)
	path := mlpFile(t)
	cache := filepath.Join(t.TempDir(), "trt-engines")
	for _, gpu := range []ort.GPUOptions{{CUDA: ort.CUDAOptions{CUDAGraph: true}},
		{CUDA: ort.CUDAOptions{CUDAGraph: true}, TensorRT: ort.TensorRTOptions{Enable: true, EngineCacheDir: cache}}} {
		restore := ort.KeepGoSignalHandlers()
		s, err := ort.Open(path, "mlp", ort.Options{IntraOpThreads: 1, CUDA: true, GPU: gpu})
		restore()
		if err == nil {
			s.Close()
			t.Fatalf("Open with %+v: no error, want ErrCUDAGraph", gpu)
		}
		if !errors.Is(err, ort.ErrCUDAGraph) || errors.Is(err, ort.ErrProviderUnavailable) ||
			!strings.Contains(err.Error(), `model "mlp"`) || !strings.Contains(err.Error(), "enable_cuda_graph: false") {
			t.Errorf("Open with %+v: %v; want ErrCUDAGraph (not a provider error) naming the model and enable_cuda_graph: false", gpu, err)
		}
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the TensorRT engine cache directory: %v; want it not created for a refused session", err)
	}
}

// gpuOptionCase is a session's GPU options and how the CPU build refuses
// them.
type gpuOptionCase struct {
	name     string
	gpu      ort.GPUOptions
	want     error    // the provider's sentinel
	provider string   // named in the message
	keys     []string // provider options the failed step was given
}

// gpuOptionCases sets each CUDA and TensorRT option in turn; cache is the
// TensorRT engine cache directory.
func gpuOptionCases(cache string) []gpuOptionCase {
	return []gpuOptionCase{
		{"cuda defaults", ort.GPUOptions{}, ort.ErrNoCUDA, ort.ProviderCUDA,
			[]string{"device_id:0", "do_copy_in_default_stream:1", "enable_cuda_graph:0"}},
		{"gpu_mem_limit", ort.GPUOptions{CUDA: ort.CUDAOptions{MemLimitBytes: 1 << 30}}, ort.ErrNoCUDA, ort.ProviderCUDA,
			[]string{"gpu_mem_limit:1073741824"}},
		{"arena_extend_strategy", ort.GPUOptions{CUDA: ort.CUDAOptions{ArenaExtendStrategy: "kSameAsRequested"}}, ort.ErrNoCUDA, ort.ProviderCUDA,
			[]string{"arena_extend_strategy:kSameAsRequested"}},
		{"cudnn_conv_algo_search", ort.GPUOptions{CUDA: ort.CUDAOptions{CuDNNConvAlgoSearch: "HEURISTIC"}}, ort.ErrNoCUDA, ort.ProviderCUDA,
			[]string{"cudnn_conv_algo_search:HEURISTIC"}},
		{"do_copy_in_default_stream off", ort.GPUOptions{CUDA: ort.CUDAOptions{CopyInSeparateStream: true}}, ort.ErrNoCUDA, ort.ProviderCUDA,
			[]string{"do_copy_in_default_stream:0"}},
		{"tensorrt", ort.GPUOptions{TensorRT: ort.TensorRTOptions{Enable: true}}, ort.ErrNoTensorRT, ort.ProviderTensorRT,
			[]string{"device_id:0", "trt_fp16_enable:0"}},
		{"tensorrt all", ort.GPUOptions{TensorRT: ort.TensorRTOptions{Enable: true, FP16: true, EngineCacheDir: cache,
			MaxWorkspaceBytes: 1 << 30, TimingCache: true}}, ort.ErrNoTensorRT, ort.ProviderTensorRT,
			[]string{"trt_fp16_enable:1", "trt_engine_cache_enable:1", "trt_engine_cache_path:" + cache,
				"trt_max_workspace_size:1073741824", "trt_timing_cache_enable:1", "trt_timing_cache_path:" + cache}},
	}
}

// TestTryProvider: on this host without CUDA, trying CUDA and TensorRT
// with the CPU build fails as ONNX Runtime's loader does, naming the
// library it could not open (a provider library, or with the GPU build a
// CUDA one such as libcublasLt.so.13), as a *ProviderError for that
// provider; with a GPU build on a GPU host both load (the test skips).
func TestTryProvider(t *testing.T) {
	orttest.Init(t)
	for _, c := range []struct {
		provider string
		want     error
	}{{ort.ProviderCUDA, ort.ErrNoCUDA}, {ort.ProviderTensorRT, ort.ErrNoTensorRT}} {
		err := ort.TryProvider(c.provider)
		if err == nil {
			t.Skipf("%s loads: this host has the libraries it needs", c.provider)
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "cannot open shared object file") ||
			!strings.Contains(err.Error(), "set its options map[device_id:0") {
			t.Errorf("TryProvider(%s) = %v; want %v naming the library the loader could not open and the options", c.provider, err, c.want)
		}
		t.Logf("%s: %v", c.provider, err)
	}
	if err := ort.TryProvider(ort.ProviderCPU); err == nil {
		t.Error("TryProvider(CPU) = nil; want an error: only the GPU providers are tried")
	}
}

func mlpFile(t *testing.T) string {
	t.Helper()
	b, err := onnxmodel.MLP(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return orttest.WriteModel(t, "mlp", b)
}
