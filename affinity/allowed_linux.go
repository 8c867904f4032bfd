package affinity

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// AllowedCPUs returns the CPUs this process may run on, as
// sched_getaffinity(2) reports them for the main thread: the result of
// taskset, cgroup cpusets and systemd's CPUAffinity=. Call it at start-up,
// before StartPinned or anything else changes a thread's mask.
func AllowedCPUs() (CPUSet, error) {
	var u unix.CPUSet
	if err := unix.SchedGetaffinity(os.Getpid(), &u); err != nil {
		return CPUSet{}, fmt.Errorf("could not read the CPU affinity of pid %d: %w", os.Getpid(), err)
	}
	return CPUSetFromUnix(&u), nil
}
