package affinity

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// GPU is one device an infer worker can be given.
type GPU struct {
	Index       int    // NVML index, as nvidia-smi shows it
	UUID        string // "GPU-…", what CUDA_VISIBLE_DEVICES should name
	Name        string // product name, e.g. "NVIDIA H100 80GB HBM3"
	PCIBusID    string // sysfs form, e.g. "0000:3b:00.0"
	MemoryBytes uint64
	// NUMANode is the node the device hangs off, from
	// /sys/bus/pci/devices/<PCIBusID>/numa_node; -1 when unknown (no NUMA,
	// or firmware that does not say).
	NUMANode int
	// CPUs are the CPUs local to the device as the driver reports them;
	// empty when unknown.
	CPUs CPUSet
}

// GPULister discovers the GPUs to plan for.
type GPULister interface {
	GPUs() ([]GPU, error)
}

// StaticGPUs is an explicit device list, as written in the config. It
// overrides discovery: the supervisor plans for exactly these devices.
type StaticGPUs []GPU

var (
	_ GPULister = StaticGPUs(nil)
	_ GPULister = NVML{}
)

// GPUs returns a copy of the list.
func (s StaticGPUs) GPUs() ([]GPU, error) {
	return append([]GPU(nil), s...), nil
}

// PCINUMANode reads /sys/bus/pci/devices/<busID>/numa_node under sysRoot
// ("" means /sys). It returns -1 without error when the device has no
// numa_node file or the kernel writes -1 (a machine without NUMA).
// busID may be in NVML's form ("00000000:3B:00.0") or sysfs's.
func PCINUMANode(sysRoot, busID string) (int, error) {
	path := filepath.Join(sysRootOr(sysRoot), "bus", "pci", "devices", sysfsBusID(busID), "numa_node")
	n, err := readInt(path)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	if n < -1 {
		return -1, fmt.Errorf("%q holds NUMA node %d", path, n)
	}
	return n, nil
}

// sysfsBusID turns NVML's bus id ("00000000:3B:00.0", an 8-digit domain,
// upper case) into the name sysfs uses ("0000:3b:00.0").
func sysfsBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	domain, rest, ok := strings.Cut(id, ":")
	if ok && len(domain) > 4 && strings.Trim(domain[:len(domain)-4], "0") == "" {
		id = domain[len(domain)-4:] + ":" + rest
	}
	return id
}
