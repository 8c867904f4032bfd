package supervisor

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/worker"
)

// Host is the machine as the placement plan sees it: the CPUs this process
// may use, grouped into cores and NUMA nodes, and the GPUs found. The
// master reads it once at start (LoadHost), before anything changes a
// thread's CPU mask, and plans every reload against it.
type Host struct {
	Topology *affinity.Topology
	// GPUs are every GPU found; infer.gpus selects from them.
	GPUs []affinity.GPU
}

// LoadHost reads the topology under sysRoot ("" means /sys), limited to
// the CPUs this process may run on (taskset, cgroup cpusets, systemd's
// CPUAffinity=), and lists the GPUs with gpus (affinity.NVML{} on a real
// host: no driver means no GPUs).
func LoadHost(sysRoot string, gpus affinity.GPULister) (*Host, error) {
	allowed, err := affinity.AllowedCPUs()
	if err != nil {
		return nil, err
	}
	topo, err := affinity.LoadTopology(sysRoot, allowed)
	if err != nil {
		return nil, fmt.Errorf("could not read the CPU topology: %w", err)
	}
	list, err := gpus.GPUs()
	if err != nil {
		return nil, fmt.Errorf("could not list the GPUs: %w (set infer.gpus: [] to serve without them)", err)
	}
	return &Host{Topology: topo, GPUs: list}, nil
}

// Describe says in one line what the plan was made from.
func (h *Host) Describe() string {
	gpus := "no GPU found"
	if n := len(h.GPUs); n > 0 {
		gpus = fmt.Sprintf("%d GPUs found", n)
	}
	return fmt.Sprintf("CPUs %s usable (%s, %s), %s", h.Topology.CPUs,
		plural(len(h.Topology.Cores), "core"), plural(len(h.Topology.Nodes), "NUMA node"), gpus)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Plan places every worker of c on h: which GPU each infer worker drives,
// which CPUs and NUMA node each worker gets, and which CPUs stay with the
// master (see affinity.Plan). It is what the master starts, what `supervisor
// check` prints, and it depends only on c and h. A config that does not
// fit the host is an error that names the key to change, with its line.
func (c *Config) Plan(h *Host) (*affinity.Placement, error) {
	gpus, err := c.selectGPUs(h.GPUs)
	if err != nil {
		return nil, err
	}
	p, err := affinity.Plan(h.Topology, gpus, c.placementRequest(len(gpus)))
	if err != nil {
		return nil, c.planError(err)
	}
	return p, nil
}

// placementRequest turns the placement keys into the planner's request.
func (c *Config) placementRequest(gpus int) affinity.Request {
	r := affinity.Request{
		Prep:       c.Prep.Workers,
		PrepCPUs:   c.Prep.CPUsPerWorker,
		InferCPUs:  c.Infer.CPUsPerWorker,
		Overcommit: c.Placement.Overcommit,
		CPUs:       map[string]string{},
	}
	if gpus == 0 {
		r.Infer = c.Infer.Workers // with GPUs: one per GPU
	}
	switch c.Placement.MasterCPUs {
	case autoValue:
	case "none":
		r.Reserve = -1
	default:
		r.CPUs["master"] = c.Placement.MasterCPUs
	}
	r.CPUs["infer"] = c.Infer.CPUs
	r.CPUs["prep"] = c.Prep.CPUs
	return r
}

// selectGPUs applies infer.gpus to the GPUs found. Listing a GPU the host
// does not have is an error, never a silent fallback to the CPU.
func (c *Config) selectGPUs(found []affinity.GPU) ([]affinity.GPU, error) {
	sel := c.Infer.GPUs
	if !sel.Explicit {
		return found, nil
	}
	var out []affinity.GPU
	var errs []error
	for i, d := range sel.Devices {
		g, ok := findGPU(found, d)
		if !ok {
			errs = append(errs, c.configError(fmt.Sprintf("infer.gpus[%d]", i),
				fmt.Errorf("GPU %q is not on this host (%s); list GPUs by the index or UUID `nvidia-smi -L` shows, or use auto", d, gpuNames(found))))
			continue
		}
		out = append(out, g)
	}
	return out, joinSorted(errs)
}

func findGPU(found []affinity.GPU, d string) (affinity.GPU, bool) {
	for _, g := range found {
		if g.UUID == d || strconv.Itoa(g.Index) == d {
			return g, true
		}
	}
	return affinity.GPU{}, false
}

func gpuNames(gpus []affinity.GPU) string {
	if len(gpus) == 0 {
		return "NVML found no GPU: no NVIDIA driver, or no device"
	}
	var names []string
	for _, g := range gpus {
		names = append(names, fmt.Sprintf("%d %s", g.Index, g.UUID))
	}
	return "found: " + strings.Join(names, ", ")
}

// planError locates a planner error at the key an operator would change.
func (c *Config) planError(err error) error {
	msg := err.Error()
	field := "placement"
	switch {
	case strings.Contains(msg, "for master") || strings.Contains(msg, "reserving"):
		field = "placement.master_cpus"
	case strings.Contains(msg, "for infer ") || strings.Contains(msg, "for infer:"):
		field = "infer.cpus"
	case strings.Contains(msg, "for prep ") || strings.Contains(msg, "for prep:"):
		field = "prep.cpus"
	case strings.Contains(msg, "infer workers:"):
		field = "infer.workers"
	case strings.HasPrefix(strings.TrimPrefix(msg, affinity.ErrNoFit.Error()+": "), "infer-"):
		field = "infer.cpus_per_worker"
		if c.Infer.CPUsPerWorker == 0 {
			field = "infer.workers"
		}
	case strings.HasPrefix(strings.TrimPrefix(msg, affinity.ErrNoFit.Error()+": "), "prep-"):
		field = "prep.workers"
		if c.Prep.CPUsPerWorker > 0 {
			field = "prep.cpus_per_worker"
		}
	}
	if errors.Is(err, affinity.ErrNoFit) {
		err = fmt.Errorf("%w (lower the count or size, give the pool more CPUs, or set placement.overcommit: true to let workers share CPUs)", err)
	}
	return c.configError(field, err)
}

// configError is err as a *ConfigError at field's line.
func (c *Config) configError(field string, err error) error {
	return &ConfigError{Source: c.origin.source, Line: c.origin.line(field), Field: field, Problem: err.Error(), Err: err}
}

// placeSpec completes a worker's template with its assignment: its
// cpuset, memory policy, device and, for an infer worker, its execution
// provider and ONNX Runtime threads.
func placeSpec(s *worker.Spec, a affinity.Assignment, cfg *Config) {
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
	}
	s.IntraOpThreads = cfg.Infer.IntraOpThreads
	if s.IntraOpThreads == 0 {
		s.IntraOpThreads = a.CPUs.Count()
	}
}

// placedSpecs are the templates of a role's workers, one per assignment of
// the plan, in plan order, each made by build and completed by placeSpec.
func placedSpecs(cfg *Config, role worker.Role, build func(name string) worker.Spec) []worker.Spec {
	var specs []worker.Spec
	for _, a := range cfg.plan.Workers {
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
func (m *Master) place(cfg *Config) error {
	if m.host == nil {
		h := m.opts.Host
		if h == nil {
			var err error
			if h, err = LoadHost("", affinity.NVML{}); err != nil {
				return err
			}
		}
		m.host = h
	}
	p, err := cfg.Plan(m.host)
	if err != nil {
		return err
	}
	cfg.plan = p
	var rows []string
	for _, a := range p.Workers {
		rows = append(rows, fmt.Sprintf("%s %s cpus %s", a.Name, a.Device(), a.CPUs))
	}
	m.log.Info().Str("host", m.host.Describe()).Str("master_cpus", p.Reserved.String()).Strs("workers", rows).Msg("placement planned")
	return nil
}

// startPlaced starts a worker's command on its cpuset and NUMA memory
// policy from its first instruction, and names its GPU in
// CUDA_VISIBLE_DEVICES, so that device 0 is the worker's own GPU.
func startPlaced(cmd *exec.Cmd, spec worker.Spec) error {
	cpus, err := affinity.ParseCPUList(spec.CPUs)
	if err != nil {
		return fmt.Errorf("worker %s: cpus: %w", spec.Name, err)
	}
	if spec.GPU != "" {
		cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+spec.GPU)
	}
	mem := affinity.MemPolicy{Mode: affinity.MemMode(spec.MemoryPolicy), Node: spec.NUMANode}
	return affinity.StartPlaced(cmd, cpus, mem)
}
