package supervisor

import (
	"fmt"
	"os"
	"strconv"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/hostcheck"
	"github.com/supervisor-dev/supervisor/worker"
)

// placeSpec completes a worker's template with its assignment: its
// cpuset, memory policy, device and, for an infer worker, its execution
// provider and ONNX Runtime threads.
func placeSpec(s *worker.Spec, a affinity.Assignment, cfg *config.Config) {
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

// placedSpecs are the templates of a role's workers, one per assignment of
// the plan, in plan order, each made by build and completed by placeSpec.
func placedSpecs(cfg *config.Config, role worker.Role, build func(name string) worker.Spec) []worker.Spec {
	var specs []worker.Spec
	for _, a := range cfg.Planned.Workers {
		if string(a.Role) != string(role) {
			continue
		}
		s := build(a.Name)
		placeSpec(&s, a, cfg)
		specs = append(specs, s)
	}
	return specs
}

// place plans cfg on the master's host (read on first use) and keeps the
// plan in cfg for specs.
func (m *Master) place(cfg *config.Config) error {
	if m.host == nil {
		h := m.opts.Host
		if h == nil {
			var err error
			if h, err = config.LoadHost("", affinity.NVML{}); err != nil {
				return err
			}
		}
		m.host = h
	}
	p, err := cfg.Plan(m.host)
	if err != nil {
		return err
	}
	if err := cfg.CheckCeiling(m.host); err != nil {
		return err
	}
	cfg.Planned = p
	var rows []string
	for _, a := range p.Workers {
		rows = append(rows, fmt.Sprintf("%s %s cpus %s", a.Name, a.Device(), a.CPUs))
	}
	m.log.Info().Str("host", m.host.Describe()).Str("master_cpus", p.Reserved.String()).Strs("workers", rows).Msg("placement planned")
	return nil
}
