package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/ort"
)

func TestConfigProvidersValues(t *testing.T) {
	c := mustParseConfig(t, `infer:
  providers:
    cuda: {gpu_mem_limit: 8GiB, cudnn_conv_algo_search: HEURISTIC}
models:
  - name: a
    path: a.onnx
  - name: b
    path: b.onnx
    providers:
      cuda: {arena_extend_strategy: kSameAsRequested, do_copy_in_default_stream: false, enable_cuda_graph: false}
      tensorrt: {enable: true, fp16: true, engine_cache_dir: /var/cache/trt, max_workspace: 2GiB, timing_cache: true}
`, "t.yaml")
	a := c.ModelProviders(c.Models[0]).ORT()
	if want := (ort.GPUOptions{CUDA: ort.CUDAOptions{MemLimitBytes: 8 << 30, CuDNNConvAlgoSearch: "HEURISTIC"},
		TensorRT: ort.TensorRTOptions{EngineCacheDir: "trt-engines"}}); !reflect.DeepEqual(a, want) {
		t.Errorf("model a (infer.providers) = %+v, want %+v", a, want)
	}
	b := c.ModelProviders(c.Models[1]).ORT()
	want := ort.GPUOptions{
		CUDA: ort.CUDAOptions{ArenaExtendStrategy: "kSameAsRequested", CopyInSeparateStream: true},
		TensorRT: ort.TensorRTOptions{Enable: true, FP16: true, EngineCacheDir: "/var/cache/trt",
			MaxWorkspaceBytes: 2 << 30, TimingCache: true},
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("model b (its own providers, over the defaults, not infer's) = %+v, want %+v", b, want)
	}
	off := mustParseConfig(t, "infer: {providers: {tensorrt: {engine_cache_dir: none}}}\n", "t.yaml")
	if got := off.ModelProviders(off.Models[0]).ORT().TensorRT.EngineCacheDir; got != "" {
		t.Errorf("engine_cache_dir: none gives %q, want \"\" (no cache)", got)
	}
}

func TestConfigProvidersErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"arena", "cuda: {arena_extend_strategy: next_power_of_two}",
			[]string{`t.yaml:4: models[0].providers.cuda.arena_extend_strategy: "next_power_of_two" is not one of kNextPowerOfTwo, kSameAsRequested`}},
		{"cudnn", "cuda:\n        cudnn_conv_algo_search: fast",
			[]string{`t.yaml:5: models[0].providers.cuda.cudnn_conv_algo_search: "fast" is not one of EXHAUSTIVE, HEURISTIC, DEFAULT`}},
		{"negative limit", "cuda: {gpu_mem_limit: -1}",
			[]string{`t.yaml:4: models[0].providers.cuda.gpu_mem_limit: `}},
		{"timing cache without engine cache", "tensorrt: {timing_cache: true, engine_cache_dir: none}",
			[]string{`t.yaml:4: models[0].providers.tensorrt.timing_cache: needs engine_cache_dir`}},
		{"empty cache dir", "tensorrt: {engine_cache_dir: ''}",
			[]string{`t.yaml:4: models[0].providers.tensorrt.engine_cache_dir: is empty`}},
		{"negative workspace", "tensorrt: {max_workspace: -1}",
			[]string{`t.yaml:4: models[0].providers.tensorrt.max_workspace: -1 is negative`}},
		{"limit not a size", "cuda: {gpu_mem_limit: lots}",
			[]string{`t.yaml:4: models[0].providers.cuda.gpu_mem_limit: "lots" is not a size`}},
		{"workspace not a size", "tensorrt: {max_workspace: 2 gigs}",
			[]string{`t.yaml:4: models[0].providers.tensorrt.max_workspace: "2 gigs" is not a size`}},
		// Every boolean option, each with a value that is not one.
		{"booleans", "cuda: {do_copy_in_default_stream: 2, enable_cuda_graph: sometimes}\n      " +
			"tensorrt: {enable: yes please, fp16: maybe, timing_cache: 1}",
			[]string{`t.yaml:4: models[0].providers.cuda.do_copy_in_default_stream: "2" is not true or false`,
				`t.yaml:4: models[0].providers.cuda.enable_cuda_graph: "sometimes" is not true or false`,
				`t.yaml:5: models[0].providers.tensorrt.enable: "yes please" is not true or false`,
				`t.yaml:5: models[0].providers.tensorrt.fp16: "maybe" is not true or false`,
				`t.yaml:5: models[0].providers.tensorrt.timing_cache: "1" is not true or false`}},
		{"cuda graph", "cuda: {enable_cuda_graph: true}",
			[]string{`t.yaml:4: models[0].providers.cuda.enable_cuda_graph: true is refused: CUDA graphs (enable_cuda_graph) are not supported`}},
		{"unknown key", "tensorrt: {int8: true}",
			[]string{`t.yaml:4: unknown key "int8" in models[0].providers.tensorrt (known keys: enable, fp16, engine_cache_dir, max_workspace, timing_cache)`}},
		{"unknown provider", "rocm: {}",
			[]string{`t.yaml:4: unknown key "rocm" in models[0].providers (known keys: cuda, tensorrt)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte("models:\n  - name: m\n    providers:\n      "+tt.yaml+"\n    path: m.onnx\n"), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
	_, err := ParseConfig([]byte("infer:\n  providers:\n    cuda: {arena_extend_strategy: big}\n"), "t.yaml")
	checkConfigErrors(t, err, []string{`t.yaml:3: infer.providers.cuda.arena_extend_strategy: "big" is not one of`})
}

// TestConfigRefusesCUDAGraph: enable_cuda_graph: true is refused at its
// line wherever it is set, infer.providers (every model's default) or a
// batching model's own providers, saying why and what to set instead.
func TestConfigRefusesCUDAGraph(t *testing.T) {
	_, err := ParseConfig([]byte(`infer:
  providers:
    cuda: {enable_cuda_graph: true}
models:
  - name: m
    path: m.onnx
    batching: {max_batch_size: 8}
    providers:
      cuda:
        enable_cuda_graph: true
`), "t.yaml")
	checkConfigErrors(t, err, []string{
		"t.yaml:3: infer.providers.cuda.enable_cuda_graph: true is refused: CUDA graphs",
		"t.yaml:10: models[0].providers.cuda.enable_cuda_graph: true is refused: CUDA graphs",
	})
	for _, w := range []string{"batching varies the batch size", "set enable_cuda_graph: false"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal %q does not say %q", err, w)
		}
	}
}

// TestCUDALibraryDirs: cuda.library_dirs is read as a list, and one that
// is not a directory on this host is a config error at its line, naming it.
func TestCUDALibraryDirs(t *testing.T) {
	dir := t.TempDir()
	c, err := ParseConfig([]byte("log_level: info\ncuda:\n  library_dirs: ["+dir+", "+dir+"/missing]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.CUDA.LibraryDirs) != 2 || c.CUDA.LibraryDirs[0] != dir {
		t.Fatalf("cuda.library_dirs = %q; want both directories", c.CUDA.LibraryDirs)
	}
	err = c.CheckFiles()
	if err == nil || !strings.Contains(err.Error(), "t.yaml:3") || !strings.Contains(err.Error(), dir+"/missing") ||
		strings.Contains(err.Error(), "library_dirs[0]") {
		t.Errorf("CheckFiles = %v; want an error at t.yaml:3 naming only %s/missing", err, dir)
	}
	if _, err := ParseConfig([]byte("cuda:\n  library_dirs: /usr/lib\n"), "t.yaml"); err == nil || !strings.Contains(err.Error(), "want a list") {
		t.Errorf("library_dirs as a string: %v; want a config error asking for a list", err)
	}
}
