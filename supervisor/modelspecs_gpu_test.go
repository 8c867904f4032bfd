package supervisor

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/modelid"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestModelSpecsProviders: each model's GPU provider options (its own
// providers section, else infer.providers) and output binding reach its
// worker spec, and survive the JSON the spec travels to the worker in.
func TestModelSpecsProviders(t *testing.T) {
	c, err := config.ParseConfig([]byte(`infer:
  providers:
    cuda: {gpu_mem_limit: 8GiB, cudnn_conv_algo_search: HEURISTIC}
models:
  - {name: a, path: a.onnx}
  - name: b
    path: b.onnx
    output_binding: pinned
    providers:
      cuda: {arena_extend_strategy: kSameAsRequested, do_copy_in_default_stream: false}
      tensorrt: {enable: true, fp16: true, engine_cache_dir: none, max_workspace: 1GiB}
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []worker.Model{ // by model; only GPU and OutputBinding are compared
		{OutputBinding: ort.OutputsOff, GPU: &ort.GPUOptions{
			CUDA:     ort.CUDAOptions{MemLimitBytes: 8 << 30, CuDNNConvAlgoSearch: "HEURISTIC"},
			TensorRT: ort.TensorRTOptions{EngineCacheDir: "trt-engines"}}},
		{OutputBinding: ort.OutputsPinned, GPU: &ort.GPUOptions{
			CUDA:     ort.CUDAOptions{ArenaExtendStrategy: "kSameAsRequested", CopyInSeparateStream: true},
			TensorRT: ort.TensorRTOptions{Enable: true, FP16: true, MaxWorkspaceBytes: 1 << 30}}},
	}
	specs := modelSpecs(c, &modelid.Cache{})
	if len(specs) != len(want) {
		t.Fatalf("modelSpecs gave %d models, want %d", len(specs), len(want))
	}
	for i, m := range specs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var got worker.Model
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.GPU, want[i].GPU) || got.OutputBinding != want[i].OutputBinding {
			t.Errorf("model %s reaches its worker with GPU %+v, output binding %q; want %+v, %q",
				m.Name, got.GPU, got.OutputBinding, want[i].GPU, want[i].OutputBinding)
		}
	}
}
