package affinity

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML discovers GPUs through the NVIDIA Management Library. The zero
// value uses libnvidia-ml.so.1 from the loader path and /sys.
type NVML struct {
	// LibraryPath is the NVML shared library; "" means libnvidia-ml.so.1.
	LibraryPath string
	// SysRoot is where sysfs is mounted, for each device's numa_node;
	// "" means /sys.
	SysRoot string
}

// GPUs initialises NVML, lists every device and shuts NVML down again, so
// the master does not keep the driver open. A host without the library or
// without a loaded driver has no GPUs: that returns an empty list and no
// error, so the same binary runs on CPU-only machines.
func (n NVML) GPUs() ([]GPU, error) {
	var gpus []GPU
	err := n.with(func(lib nvml.Interface) (err error) {
		gpus, err = n.list(lib)
		return err
	})
	return gpus, err
}

// with initialises NVML, runs f and shuts NVML down again, so the master
// does not keep the driver open. Without the library or a loaded driver
// it runs nothing and returns nil: a host with no GPUs.
func (n NVML) with(f func(nvml.Interface) error) error {
	var opts []nvml.LibraryOption
	if n.LibraryPath != "" {
		opts = append(opts, nvml.WithLibraryPath(n.LibraryPath))
	}
	lib := nvml.New(opts...)
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil
	default:
		return fmt.Errorf("could not initialise NVML: %w", ret)
	}
	err := f(lib)
	if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
		err = fmt.Errorf("could not shut NVML down: %w", ret)
	}
	return err
}

func (n NVML) list(lib nvml.Interface) ([]GPU, error) {
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("could not count NVML devices: %w", ret)
	}
	gpus := make([]GPU, 0, count)
	for i := 0; i < count; i++ {
		g, err := n.device(lib, i)
		if err != nil {
			return nil, err
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// device reads one device's identity, memory, CPU affinity and NUMA node.
func (n NVML) device(lib nvml.Interface, i int) (GPU, error) {
	d, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("could not open NVML device %d: %w", i, ret)
	}
	g := GPU{Index: i, NUMANode: -1}
	var errs []error
	check := func(what string, ret nvml.Return) {
		if ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("could not read the %s of NVML device %d: %w", what, i, ret))
		}
	}
	g.UUID, ret = d.GetUUID()
	check("UUID", ret)
	g.Name, ret = d.GetName()
	check("name", ret)
	pci, ret := d.GetPciInfo()
	check("PCI info", ret)
	g.PCIBusID = sysfsBusID(cString(pci.BusId[:]))
	mem, ret := d.GetMemoryInfo()
	check("memory info", ret)
	g.MemoryBytes = mem.Total
	if mask, ret := d.GetCpuAffinity(MaxCPUs); ret == nvml.SUCCESS {
		g.CPUs = cpuSetFromWords(mask)
	} // else: not supported on this device; local CPUs stay unknown.
	if err := errors.Join(errs...); err != nil {
		return GPU{}, err
	}
	node, err := PCINUMANode(n.SysRoot, g.PCIBusID)
	if err != nil {
		return GPU{}, fmt.Errorf("NVML device %d: %w", i, err)
	}
	g.NUMANode = node
	return g, nil
}

// cString returns the bytes before the first NUL.
func cString(b []uint8) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
