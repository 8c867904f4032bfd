package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/affinity"
)

// TestGPUCheckScript: on a host without GPUs (a fake NVML with none, so
// that the test runs on GPU hosts too), scripts/gpu-check prints the NVML
// view, the placement plan and the providers, then says on its last line
// that no GPU was found, and exits 0.
func TestGPUCheckScript(t *testing.T) {
	if _, err := os.Stat("../../models/default.onnx"); err != nil {
		t.Skip("models/default.onnx is missing: run `make setup` (check loads it)")
	}
	cmd := exec.Command("../../scripts/gpu-check")
	cmd.Env = append(append(os.Environ(), fakeGPUEnv(t, 0)...), "SUPERVISOR_BIN="+binPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-check: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "gpu-check: no GPU found on this host") {
		t.Errorf("last line %q; want it to say that no GPU was found", last)
	}
	for _, want := range []string{noGPULine, "# Placement on this host", "CPUExecutionProvider", "No GPU worker is planned"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("gpu-check output lacks %q:\n%s", want, out)
		}
	}
}

func TestPrintGPUs(t *testing.T) {
	var b bytes.Buffer
	printGPUs(&b, affinity.Driver{}, nil)
	if b.String() != noGPULine+"\n" {
		t.Errorf("no GPUs: %q; want %q", b.String(), noGPULine)
	}
	b.Reset()
	printGPUs(&b, affinity.Driver{Version: "550.54.15", CUDA: "12.4"}, []affinity.GPU{
		{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100", PCIBusID: "0000:3b:00.0", NUMANode: 0, MemoryBytes: 80 << 30},
		{Index: 1, UUID: "GPU-b", Name: "NVIDIA H100", PCIBusID: "0000:5d:00.0", NUMANode: -1, MemoryBytes: 80 << 30}})
	want := "NVIDIA driver 550.54.15 (CUDA 12.4), 2 GPUs\n" +
		"GPU 0  GPU-a  NVIDIA H100  0000:3b:00.0  NUMA node 0  80.0 GiB\n" +
		"GPU 1  GPU-b  NVIDIA H100  0000:5d:00.0  NUMA node -  80.0 GiB\n"
	if b.String() != want {
		t.Errorf("printGPUs =\n%s\nwant\n%s", b.String(), want)
	}
}

// TestCheckRefusesPinnedWithoutGPU: on a host without GPUs (a fake NVML
// with none), check fails at the line that asks for output_binding:
// pinned, naming the model and what to change; a model that turns it off
// is not named.
func TestCheckRefusesPinnedWithoutGPU(t *testing.T) {
	model, err := filepath.Abs("../../models/default.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Skip("models/default.onnx is missing: run `make setup` (check loads it)")
	}
	conf := filepath.Join(t.TempDir(), "pinned.yaml")
	yaml := fmt.Sprintf("infer:\n  output_binding: pinned\nmodels:\n  - {name: a, path: %q}\n  - {name: b, path: %q, output_binding: \"off\"}\nplacement: {overcommit: true}\n", model, model)
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "check", "-c", conf)
	cmd.Env = append(os.Environ(), fakeGPUEnv(t, 0)...)
	out, err := cmd.CombinedOutput()
	want := conf + `:2: infer.output_binding: model "a": output_binding: pinned needs a GPU (CUDA) session, and this host's plan has none (set output_binding: off for this model`
	if err == nil || !strings.Contains(string(out), want) || strings.Contains(string(out), `model "b"`) {
		t.Errorf("check: %v\n%s\nwant it to fail with %s, and not name model \"b\"", err, out, want)
	}
}
