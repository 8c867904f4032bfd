package affinity

import (
	"fmt"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// GPURoom says whether a second copy of a process fits on its GPU beside
// it: the device's free memory, as NVML reports it, against the memory
// NVML says the process uses now. A recycled or reloaded infer worker's
// replacement boots on the same GPU as the worker it replaces; when it
// would not fit there, the two must not run at once.
type GPURoom struct {
	NVML NVML
}

// Fits reports whether a process as large as pid fits in the free memory
// of device (a UUID, as CUDA_VISIBLE_DEVICES names it, or an NVML index).
// why says what the answer rests on: the figures when it does not fit,
// and, when it fits only for lack of figures (no NVML on this host, pid
// not among the device's processes, NVML failing), what was missing, so
// the caller goes on as it did before NVML could tell; "" when it fits by
// the figures.
func (r GPURoom) Fits(device string, pid int) (ok bool, why string) {
	ok, why, ran := true, "", false
	err := r.NVML.with(func(lib nvml.Interface) error {
		ran = true
		var err error
		ok, why, err = fits(lib, device, pid)
		return err
	})
	switch {
	case err != nil:
		return true, fmt.Sprintf("could not compare GPU memory: %v", err)
	case !ran:
		return true, "no NVML on this host to compare GPU memory"
	}
	return ok, why
}

func fits(lib nvml.Interface, device string, pid int) (bool, string, error) {
	var d nvml.Device
	var ret nvml.Return
	if i, err := strconv.Atoi(device); err == nil {
		d, ret = lib.DeviceGetHandleByIndex(i)
	} else {
		d, ret = lib.DeviceGetHandleByUUID(device)
	}
	if ret != nvml.SUCCESS {
		return true, "", fmt.Errorf("could not open NVML device %s: %w", device, ret)
	}
	mem, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return true, "", fmt.Errorf("could not read the memory of NVML device %s: %w", device, ret)
	}
	procs, ret := d.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return true, "", fmt.Errorf("could not list the processes on NVML device %s: %w", device, ret)
	}
	for _, p := range procs {
		if int(p.Pid) != pid {
			continue
		}
		// NVML_VALUE_NOT_AVAILABLE: the driver does not account per process.
		if p.UsedGpuMemory == ^uint64(0) {
			return true, fmt.Sprintf("NVML does not report pid %d's memory on GPU %s", pid, device), nil
		}
		if mem.Free < p.UsedGpuMemory {
			return false, fmt.Sprintf("free %s, worker uses %s", gib(mem.Free), gib(p.UsedGpuMemory)), nil
		}
		return true, "", nil
	}
	// In a container with a PID namespace of its own, NVML lists the
	// host's pids: ours are not among them.
	return true, fmt.Sprintf("pid %d is not among NVML's processes on GPU %s (a container's PID namespace?)", pid, device), nil
}

// gib renders bytes in GiB, one decimal: "9.5 GiB".
func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
