package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/affinity"
)

// TestGPUCheckScript: on a host without GPUs, scripts/gpu-check prints the
// NVML view, the placement plan and the providers, then says on its last
// line that no GPU was found, and exits 0.
func TestGPUCheckScript(t *testing.T) {
	if out, err := exec.Command(binPath, "gpus").Output(); err != nil || !strings.HasPrefix(string(out), noGPULine) {
		t.Skipf("this host has GPUs (or gpus failed: %v): gpu-check would run the GPU benchmarks", err)
	}
	if _, err := os.Stat("../../models/default.onnx"); err != nil {
		t.Skip("models/default.onnx is missing: run `make setup` (check loads it)")
	}
	cmd := exec.Command("../../scripts/gpu-check")
	cmd.Env = append(os.Environ(), "SUPERVISOR_BIN="+binPath)
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
