package worker

import (
	"fmt"
	"os"
	"runtime"

	"github.com/supervisor-dev/supervisor/affinity"
)

// applyPlacement sizes the Go runtime to the cpuset the master started
// this worker on and logs where the worker runs. The kernel already keeps
// every thread on those CPUs (the master pinned the worker before its
// first instruction); GOMAXPROCS is set explicitly because the runtime
// would otherwise take it from a GOMAXPROCS variable inherited from the
// master's environment, or from a cgroup CPU limit meant for the master
// and all its workers together.
func (r *Runtime) applyPlacement() {
	if r.Spec.CPUs == "" {
		return
	}
	cpus, err := affinity.ParseCPUList(r.Spec.CPUs)
	if err != nil || cpus.IsEmpty() {
		r.Log.Warn().Str("cpus", r.Spec.CPUs).Err(err).Msg("spec has no usable cpuset; GOMAXPROCS left as it is")
		return
	}
	runtime.GOMAXPROCS(cpus.Count())
	ev := r.Log.Info().Str("cpus", r.Spec.CPUs).Int("gomaxprocs", runtime.GOMAXPROCS(0))
	if actual, err := affinity.AllowedCPUs(); err == nil {
		ev = ev.Str("affinity", actual.String())
	}
	if r.Spec.MemoryPolicy != "" {
		ev = ev.Str("memory", fmt.Sprintf("%s:%d", r.Spec.MemoryPolicy, r.Spec.NUMANode))
	}
	if r.Spec.Role == RoleInfer {
		ev = ev.Str("provider", r.Spec.Provider).Str("device", r.Spec.Device()).
			Str("cuda_visible_devices", os.Getenv("CUDA_VISIBLE_DEVICES")).Int("intra_op_threads", r.Spec.IntraOpThreads)
	}
	ev.Msg("placed")
}
