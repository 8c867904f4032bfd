package infer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestGPUWorkerBootError: an infer worker given a GPU, with the CPU build
// of ONNX Runtime, fails to boot with a typed error that names the model,
// the provider its options asked for first (TensorRT here) and what to do.
func TestGPUWorkerBootError(t *testing.T) {
	lib, path := mlpOnDisk(t)
	if _, err := os.Stat(filepath.Join(filepath.Dir(lib), "libonnxruntime_providers_tensorrt.so")); err == nil {
		t.Skip("this ONNX Runtime library has the TensorRT provider beside it")
	}
	spec := &worker.Spec{Role: worker.RoleInfer, Name: "infer-0", ORTLibrary: lib, IntraOpThreads: 1,
		Provider: worker.ProviderCUDA, GPU: "GPU-fake-0",
		Models: []worker.Model{{Name: "mlp", Path: path, Warmup: worker.WarmupNone,
			GPU: &ort.GPUOptions{TensorRT: ort.TensorRTOptions{Enable: true, FP16: true}}}}}
	s, err := load(&worker.Runtime{Spec: spec, Log: zerolog.Nop()})
	if err == nil {
		s.close()
		t.Fatal("load on a CPU-only ONNX Runtime with a GPU worker: no error")
	}
	if !errors.Is(err, ort.ErrNoTensorRT) || !strings.Contains(err.Error(), `model "mlp"`) ||
		!strings.Contains(err.Error(), "tensorrt.enable") {
		t.Errorf("boot error = %v; want ErrNoTensorRT naming model \"mlp\" and what to change", err)
	}
}

// TestCPUWorkerRefusesPinnedOutputs: a CPU infer worker given a model with
// output_binding pinned boots, serves that model as unavailable with
// ort.ErrPinnedNeedsGPU's words and what to change, and serves the others.
func TestCPUWorkerRefusesPinnedOutputs(t *testing.T) {
	lib, path := mlpOnDisk(t)
	spec := &worker.Spec{Role: worker.RoleInfer, Name: "infer-0", ORTLibrary: lib, IntraOpThreads: 1,
		Provider: worker.ProviderCPU, Models: []worker.Model{
			{Name: "pinned", Path: path, Warmup: worker.WarmupNone, OutputBinding: ort.OutputsPinned},
			{Name: "plain", Path: path, Warmup: worker.WarmupNone}}}
	s, err := load(&worker.Runtime{Spec: spec, Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("load: %v (a model's output binding must not fail the worker)", err)
	}
	defer s.close()
	reason := s.cat.Load().unavailable["pinned"]
	if !strings.Contains(reason, `model "pinned"`) || !strings.Contains(reason, ort.ErrPinnedNeedsGPU.Error()) ||
		!strings.Contains(reason, "set output_binding: off") {
		t.Errorf("unavailable reason %q; want ErrPinnedNeedsGPU naming model \"pinned\" and what to change", reason)
	}
	if _, ok := s.cat.Load().models["plain"]; !ok {
		t.Errorf("model \"plain\" does not serve (unavailable: %q)", s.cat.Load().unavailable["plain"])
	}
}

// TestGPUWorkerRefusesCUDAGraph: an infer worker given a GPU and a model
// whose spec asks for CUDA graphs (a spec not from a validated config)
// boots and serves that model as unavailable with ort.ErrCUDAGraph's words
// and what to change, refused before any provider is asked, so the same on
// the CPU build as on a GPU host.
func TestGPUWorkerRefusesCUDAGraph(t *testing.T) {
	lib, path := mlpOnDisk(t)
	spec := &worker.Spec{Role: worker.RoleInfer, Name: "infer-0", ORTLibrary: lib, IntraOpThreads: 1,
		Provider: worker.ProviderCUDA, GPU: "GPU-fake-0",
		Models: []worker.Model{{Name: "graph", Path: path, Warmup: worker.WarmupNone,
			GPU: &ort.GPUOptions{CUDA: ort.CUDAOptions{CUDAGraph: true}}}}}
	s, err := load(&worker.Runtime{Spec: spec, Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("load: %v (a model refused for its options must not fail the worker as a GPU error)", err)
	}
	defer s.close()
	reason := s.cat.Load().unavailable["graph"]
	if !strings.Contains(reason, `model "graph"`) || !strings.Contains(reason, ort.ErrCUDAGraph.Error()) ||
		!strings.Contains(reason, "enable_cuda_graph: false") {
		t.Errorf("unavailable reason %q; want ErrCUDAGraph naming model \"graph\" and what to change", reason)
	}
}

// mlpOnDisk returns the ONNX Runtime library (the test skips without one)
// and the path of a one-layer MLP model written for the test.
func mlpOnDisk(t *testing.T) (lib, path string) {
	t.Helper()
	lib, err := ort.FindLibrary()
	if err != nil {
		t.Skip(err)
	}
	b, err := onnxmodel.MLP(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return lib, orttest.WriteModel(t, "mlp", b)
}
