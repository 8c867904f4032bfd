package affinity

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// GPUUsage is how busy one device is now, as `supervisor status` and
// /metrics show it.
type GPUUsage struct {
	Index int
	UUID  string
	Name  string
	// UtilizationPercent is the share of the last sample period in which a
	// kernel ran (NVML's GPU utilisation), 0..100.
	UtilizationPercent uint32
	MemoryUsedBytes    uint64
	MemoryTotalBytes   uint64
}

// Usage reads every device's utilisation and memory through NVML, then
// shuts NVML down again. A host without the library or the driver has no
// GPUs: that returns an empty list and no error.
func (n NVML) Usage() ([]GPUUsage, error) {
	var out []GPUUsage
	err := n.with(func(lib nvml.Interface) error {
		count, ret := lib.DeviceGetCount()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("could not count NVML devices: %w", ret)
		}
		for i := 0; i < count; i++ {
			d, ret := lib.DeviceGetHandleByIndex(i)
			if ret != nvml.SUCCESS {
				return fmt.Errorf("could not open NVML device %d: %w", i, ret)
			}
			u := GPUUsage{Index: i}
			u.UUID, _ = d.GetUUID()
			u.Name, _ = d.GetName()
			if rates, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
				u.UtilizationPercent = rates.Gpu
			}
			if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
				u.MemoryUsedBytes, u.MemoryTotalBytes = mem.Used, mem.Total
			}
			out = append(out, u)
		}
		return nil
	})
	return out, err
}
