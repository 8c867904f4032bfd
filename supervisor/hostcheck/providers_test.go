package hostcheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/config/plan"
)

// gpuHost is the fake smt16 sysfs tree with n fake GPUs on it.
func gpuHost(t *testing.T, n int) *plan.Host {
	t.Helper()
	topo, err := affinity.LoadTopology("../../affinity/testdata/smt16", affinity.CPUSet{})
	if err != nil {
		t.Fatal(err)
	}
	var gpus []affinity.GPU
	for i := range n {
		gpus = append(gpus, affinity.GPU{Index: i, UUID: "GPU-fake-" + string(rune('0'+i)), NUMANode: -1})
	}
	return &plan.Host{Topology: topo, GPUs: gpus}
}

// TestProvidersCPUBuild: with the CPU build of ONNX Runtime, check
// lists what the library offers, and a plan with a GPU worker is reported
// as one that cannot run, with what to do, before any worker boots; a plan
// without GPUs is fine.
func TestProvidersCPUBuild(t *testing.T) {
	lib, err := ort.FindLibrary()
	if err != nil {
		t.Skip(err)
	}
	c, plan := planned(t, "onnxruntime_library: "+lib+"\ninfer:\n  gpus: auto\n")
	r, err := Providers(c, plan)
	if r != nil && r.Tried[ort.ProviderCUDA] == nil {
		t.Skip("ONNX Runtime loads CUDA on this host")
	}
	if !errors.Is(err, ErrGPUPlanCannotRun) || !strings.Contains(err.Error(), "infer-0") {
		t.Errorf("Providers with a GPU worker on the CPU build: %v; want ErrGPUPlanCannotRun naming infer-0", err)
	}
	out := r.String()
	for _, want := range []string{
		ort.ProviderCPU,
		"# infer-0 (GPU 0 GPU-fake-0): cannot run: this ONNX Runtime has no usable CUDAExecutionProvider",
		"run scripts/fetch-ort gpu",
		// The CPU build has no provider library: named as missing, and
		// ONNX Runtime's loader says what it could not open.
		"#   missing libonnxruntime_providers_cuda.so (the GPU build of ONNX Runtime: scripts/fetch-ort gpu)",
		"cannot open shared object file",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	t.Log("\n" + out)

	cpu, plan := planned(t, "onnxruntime_library: "+lib+"\ninfer:\n  gpus: []\n")
	r, err = Providers(cpu, plan)
	if err != nil || len(r.GPUWorkers) != 0 || !strings.Contains(r.String(), "No GPU worker is planned") {
		t.Errorf("Providers with gpus: [] = %v, %v; want no GPU worker and no error", r, err)
	}
}

// TestGPUProvidersOrder: TensorRT is checked ahead of CUDA once a model
// turns it on.
func TestGPUProvidersOrder(t *testing.T) {
	c, _ := planned(t, "models:\n  - name: a\n    path: a.onnx\n  - name: b\n    path: b.onnx\n    providers: {tensorrt: {enable: true}}\n")
	if got := gpuProviders(c); len(got) != 2 || got[0] != ort.ProviderTensorRT || got[1] != ort.ProviderCUDA {
		t.Errorf("gpuProviders() = %v; want TensorRT then CUDA", got)
	}
	if got := gpuProviders(config.DefaultConfig()); len(got) != 1 || got[0] != ort.ProviderCUDA {
		t.Errorf("default gpuProviders() = %v; want CUDA", got)
	}
}

// planned parses a test's config and plans it on the fake host with one
// GPU, failing the test on an error.
func planned(t *testing.T, data string) (*config.Config, *affinity.Placement) {
	t.Helper()
	c, err := config.ParseConfig([]byte(data), "t.yaml")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	placed, err := plan.Place(c, gpuHost(t, 1))
	if err != nil {
		t.Fatalf("Plan on a host with one GPU: %v", err)
	}
	return c, placed
}
