package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/internal/plural"
	"github.com/supervisor-dev/supervisor/supervisor/config"
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
		gpus = plural.Count(n, "GPU") + " found"
	}
	return fmt.Sprintf("CPUs %s usable (%s, %s), %s", h.Topology.CPUs,
		plural.Count(len(h.Topology.Cores), "core"), plural.Count(len(h.Topology.Nodes), "NUMA node"), gpus)
}

// Place places every worker of c on h: which GPU each infer worker drives,
// which CPUs and NUMA node each worker gets, and which CPUs stay with the
// master (see affinity.Plan). It is what the master starts, what `supervisor
// check` prints, and it depends only on c and h. A config that does not
// fit the host is an error that names the key to change, with its line.
func Place(c *config.Config, h *Host) (*affinity.Placement, error) {
	gpus, err := selectGPUs(c, h.GPUs)
	if err != nil {
		return nil, err
	}
	p, err := affinity.Plan(h.Topology, gpus, placementRequest(c, len(gpus)))
	if err != nil {
		return nil, planError(c, err)
	}
	return p, nil
}

// placementRequest turns the placement keys into the planner's request.
func placementRequest(c *config.Config, gpus int) affinity.Request {
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
	case affinity.Auto:
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
func selectGPUs(c *config.Config, found []affinity.GPU) ([]affinity.GPU, error) {
	sel := c.Infer.GPUs
	if !sel.Explicit {
		return found, nil
	}
	var out []affinity.GPU
	var errs []error
	for i, d := range sel.Devices {
		g, ok := findGPU(found, d)
		if !ok {
			errs = append(errs, c.FieldError(fmt.Sprintf("infer.gpus[%d]", i),
				fmt.Errorf("GPU %q is not on this host (%s); list GPUs by the index or UUID `nvidia-smi -L` shows, or use auto", d, gpuNames(found))))
			continue
		}
		out = append(out, g)
	}
	return out, config.JoinByLine(errs)
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
func planError(c *config.Config, err error) error {
	field := "placement"
	var pe *affinity.PlanError
	if errors.As(err, &pe) {
		field = planField(c, pe)
	}
	if errors.Is(err, affinity.ErrNoFit) {
		err = fmt.Errorf("%w (lower the count or size, give the pool more CPUs, or set placement.overcommit: true to let workers share CPUs)", err)
	}
	return c.FieldError(field, err)
}

// cpusFields are the config keys that fill placement request's CPUs keys
// (placementRequest).
var cpusFields = map[string]string{"master": "placement.master_cpus", "infer": "infer.cpus", "prep": "prep.cpus"}

// planField is the config key behind the part of the placement request a
// PlanError blames ("placement" when no one key is).
func planField(c *config.Config, pe *affinity.PlanError) string {
	switch pe.Field {
	case affinity.FieldCPUs:
		if f, ok := cpusFields[pe.Key]; ok {
			return f
		}
	case affinity.FieldReserve:
		return "placement.master_cpus"
	case affinity.FieldInfer:
		return "infer.workers"
	case affinity.FieldSize:
		return sizeField(c, pe.Role)
	}
	return "placement"
}

// sizeField is the key that sized a worker of role that did not fit: its
// CPUs per worker when given, else the count.
func sizeField(c *config.Config, role affinity.Role) string {
	if role == affinity.RoleInfer {
		if c.Infer.CPUsPerWorker == 0 {
			return "infer.workers"
		}
		return "infer.cpus_per_worker"
	}
	if c.Prep.CPUsPerWorker > 0 {
		return "prep.cpus_per_worker"
	}
	return "prep.workers"
}

// CheckCeiling checks that an autoscaled prep pool fits h at
// prep.max_workers too, so that no grow fails for want of CPUs; nil
// without autoscaling.
func CheckCeiling(c *config.Config, h *Host) error {
	if !c.Prep.Autoscaled() {
		return nil
	}
	if _, err := Place(c.WithPrepWorkers(c.Prep.MaxWorkers), h); err != nil {
		return fmt.Errorf("prep.max_workers: %d prep workers do not fit this host (lower it, or set placement.overcommit: true): %w", c.Prep.MaxWorkers, err)
	}
	return nil
}
