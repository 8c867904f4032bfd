package main

import (
	"fmt"
	"io"
	"os"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/plural"
)

// noGPULine is what `supervisor gpus` prints on a host without GPUs;
// scripts/gpu-check and scripts/fetch-ort read it.
const noGPULine = "no GPU found (NVML: no NVIDIA driver, or no device)"

// gpus prints the NVML view of the host: the driver, then one line per
// GPU with its index, UUID, name, PCI bus, NUMA node and memory. It
// exits 0 with noGPULine on a host without GPUs.
func gpus(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("gpus takes no arguments\n%s", usage)
	}
	n := affinity.NVML{}
	list, err := n.GPUs()
	if err != nil {
		return err
	}
	d, err := n.Driver()
	if err != nil {
		return err
	}
	printGPUs(os.Stdout, d, list)
	return nil
}

func printGPUs(w io.Writer, d affinity.Driver, list []affinity.GPU) {
	if len(list) == 0 {
		fmt.Fprintln(w, noGPULine)
		return
	}
	fmt.Fprintf(w, "NVIDIA driver %s (CUDA %s), %s\n", d.Version, d.CUDA, plural.Count(len(list), "GPU"))
	for _, g := range list {
		node := "NUMA node -"
		if g.NUMANode >= 0 {
			node = fmt.Sprintf("NUMA node %d", g.NUMANode)
		}
		fmt.Fprintf(w, "GPU %d  %s  %s  %s  %s  %.1f GiB\n", g.Index, g.UUID, g.Name, g.PCIBusID, node,
			float64(g.MemoryBytes)/(1<<30))
	}
}
