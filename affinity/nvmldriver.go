package affinity

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Driver is the NVIDIA driver as NVML reports it.
type Driver struct {
	Version string // e.g. "550.54.15"; "" on a host without a driver
	// CUDA is the newest CUDA version the driver supports, e.g. "12.4";
	// a GPU build of ONNX Runtime for CUDA 12 needs 12.x or later.
	CUDA string
}

// Driver reads the driver's version and the CUDA version it supports. A
// host without the library or a loaded driver returns the zero Driver and
// no error, as GPUs does.
func (n NVML) Driver() (Driver, error) {
	var d Driver
	err := n.with(func(lib nvml.Interface) error {
		v, ret := lib.SystemGetDriverVersion()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("could not read the NVIDIA driver version: %w", ret)
		}
		cuda, ret := lib.SystemGetCudaDriverVersion()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("could not read the CUDA version of NVIDIA driver %s: %w", v, ret)
		}
		d = Driver{Version: v, CUDA: fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10)}
		return nil
	})
	return d, err
}
