package workerspec

import (
	"os"
	"strconv"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/hostcheck"
	"github.com/supervisor-dev/supervisor/worker"
)

// Place completes a worker's template with its assignment: its
// cpuset, memory policy, device and, for an infer worker, its execution
// provider and ONNX Runtime threads.
func Place(s *worker.Spec, a affinity.Assignment, cfg *config.Config) {
	s.CPUs = a.CPUs.String()
	if mode := affinity.MemMode(cfg.Placement.NUMAMemory); mode != "none" && a.NUMANode >= 0 {
		s.MemoryPolicy, s.NUMANode = string(mode), a.NUMANode
	}
	if s.Role != worker.RoleInfer {
		return
	}
	s.Provider = worker.ProviderCPU
	if g := a.GPU; g != nil {
		s.Provider, s.GPU, s.GPUIndex = worker.ProviderCUDA, g.UUID, g.Index
		if g.UUID == "" {
			s.GPU = strconv.Itoa(g.Index)
		}
		// Where the CUDA libraries of the GPU providers were found
		// (wheels, CUDA_HOME, cuda.library_dirs), for startPlaced.
		s.LibraryPath = hostcheck.LibraryPath(cfg, os.Getenv("LD_LIBRARY_PATH"))
	}
	s.IntraOpThreads = cfg.Infer.IntraOpThreads
	if s.IntraOpThreads == 0 {
		s.IntraOpThreads = a.CPUs.Count()
	}
}

// Placed are the templates of a role's workers, one per assignment of
// the plan, in plan order, each made by build and completed by Place.
func Placed(cfg *config.Config, role worker.Role, build func(name string) worker.Spec) []worker.Spec {
	var specs []worker.Spec
	for _, a := range cfg.Planned.Workers {
		if string(a.Role) != string(role) {
			continue
		}
		s := build(a.Name)
		Place(&s, a, cfg)
		specs = append(specs, s)
	}
	return specs
}
