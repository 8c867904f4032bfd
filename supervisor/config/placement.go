package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/supervisor-dev/supervisor/affinity"
)

// Placement keys decide which CPUs, NUMA node and GPU each worker gets
// (see affinity.Plan for the rules). They live in three places: infer.gpus,
// {prep,infer}.cpus and {prep,infer}.cpus_per_worker in their pool's
// section, and what concerns the whole machine in placement. Parsing only
// checks what can be checked anywhere (syntax, explicit lists that overlap
// each other); whether a config fits the machine is decided by plan.Place
// on the host, which reports a misfit with the line of the key to change.

// autoValue is the value of a placement key left to the planner.
const autoValue = affinity.Auto

// PlacementConfig is the placement section: what concerns the whole
// machine rather than one pool.
type PlacementConfig struct {
	// MasterCPUs are the CPUs kept for the master (its load balancer) and
	// the kernel: no worker is placed on them. "auto" reserves one core
	// when at least 4 CPUs are usable and none below; "none" reserves
	// nothing; otherwise a CPU list such as "0" or "0,64".
	MasterCPUs string `yaml:"master_cpus"`
	// NUMAMemory binds each worker's memory to the NUMA node of its CPUs:
	// "none" (the kernel's first-touch default), "preferred" (that node
	// first, others when it is full) or "bind" (only that node). Workers
	// whose CPUs span nodes are left alone.
	NUMAMemory string `yaml:"numa_memory"`
	// Overcommit: when worker counts or sizes given in the config need
	// more CPUs than are left, false refuses the config (the error says
	// what does not fit) and true lets the extra workers share CPUs.
	Overcommit bool `yaml:"overcommit"`
}

// GPUSelection is infer.gpus: the GPUs that get an infer worker each. The
// zero value is "auto": every GPU NVML finds, none on a host without the
// NVIDIA driver.
type GPUSelection struct {
	// Explicit is false for "auto".
	Explicit bool
	// Devices are the GPUs listed, each an NVML index ("0", as nvidia-smi
	// numbers them) or a UUID ("GPU-…", "MIG-…"). Explicit with no
	// devices means none: infer workers on the CPU execution provider
	// even on a GPU host.
	Devices []string
}

// String is "auto", "[]" or the list, as the config writes it.
func (g GPUSelection) String() string {
	if !g.Explicit {
		return autoValue
	}
	return "[" + strings.Join(g.Devices, ", ") + "]"
}

// MarshalYAML writes "auto" or a flow list; indexes stay numbers.
func (g GPUSelection) MarshalYAML() (any, error) {
	if !g.Explicit {
		return autoValue, nil
	}
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, d := range g.Devices {
		item := &yaml.Node{Kind: yaml.ScalarNode, Value: d, Tag: "!!str"}
		if _, err := strconv.Atoi(d); err == nil {
			item.Tag = "!!int"
		}
		n.Content = append(n.Content, item)
	}
	return n, nil
}

// gpuSelection decodes infer.gpus: "auto" or a list of indexes and UUIDs.
func (d *configDecoder) gpuSelection(dst *GPUSelection) func(*yaml.Node, string) {
	return func(n *yaml.Node, field string) {
		if n.Kind == yaml.ScalarNode && n.Value == autoValue {
			*dst = GPUSelection{}
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, field, "want auto, [] (no GPUs) or a list of GPU indexes or UUIDs such as [0, 1], got %s", yamlKindName(n))
			return
		}
		sel := GPUSelection{Explicit: true}
		for i, item := range n.Content {
			item = yamlDeref(item)
			d.lines[fmt.Sprintf("%s[%d]", field, i)] = item.Line
			if item.Kind != yaml.ScalarNode || yamlIsNull(item) {
				d.errorf(item, fmt.Sprintf("%s[%d]", field, i), "want a GPU index such as 0 or a UUID such as GPU-…, got %s", yamlKindName(item))
				continue
			}
			sel.Devices = append(sel.Devices, strings.TrimSpace(item.Value))
		}
		*dst = sel
	}
}

// placementKeys are the keys of the placement section.
func (d *configDecoder) placementKeys(p *PlacementConfig) []configKey {
	return d.fieldKeys(p)
}

// poolPlacementKeys are the placement keys of the prep and infer sections.
func (d *configDecoder) poolPlacementKeys(cpus *string, perWorker *int) []configKey {
	return []configKey{
		{"cpus", d.str(cpus)},
		{"cpus_per_worker", d.integer(perWorker)},
	}
}

// placement validates every placement key: the syntax of CPU lists and
// GPU entries, and explicit CPU lists that overlap each other.
func (v *configValidator) placement(c *Config) {
	lists := map[string]affinity.CPUSet{}
	for _, f := range []struct {
		field, value string
		words        bool // "none" is allowed
	}{{"placement.master_cpus", c.Placement.MasterCPUs, true}, {"infer.cpus", c.Infer.CPUs, false}, {"prep.cpus", c.Prep.CPUs, false}} {
		if set, ok := v.cpuList(f.field, f.value, f.words); ok && !set.IsEmpty() {
			lists[f.field] = set
		}
	}
	v.overlaps(lists, []string{"placement.master_cpus", "infer.cpus", "prep.cpus"})
	for _, f := range []struct {
		field string
		n     int
	}{{"prep.cpus_per_worker", c.Prep.CPUsPerWorker}, {"infer.cpus_per_worker", c.Infer.CPUsPerWorker}} {
		if f.n < 0 || f.n > affinity.MaxCPUs {
			v.errorf(f.field, "%d is out of range (use 0 for one core each, or 1 to %d CPUs)", f.n, affinity.MaxCPUs)
		}
	}
	switch affinity.MemMode(c.Placement.NUMAMemory) {
	case "none", affinity.MemPreferred, affinity.MemBind:
	default:
		v.errorf("placement.numa_memory", "%q is not a memory policy (use none, preferred or bind)", c.Placement.NUMAMemory)
	}
	v.gpus(c.Infer.GPUs)
}

// cpuList checks one cpus value: "auto", "none" where allowed, or a
// non-empty CPU list. It returns the list (empty for the words).
func (v *configValidator) cpuList(field, value string, none bool) (affinity.CPUSet, bool) {
	words := "auto or a CPU list such as 2-7,10"
	if none {
		words = "auto, none or a CPU list such as 0 or 0,64"
	}
	switch value = strings.TrimSpace(value); {
	case value == autoValue, none && value == "none":
		return affinity.CPUSet{}, true
	case value == "":
		v.errorf(field, "is empty (use %s)", words)
		return affinity.CPUSet{}, false
	}
	set, err := affinity.ParseCPUList(value)
	if err != nil {
		v.errorf(field, "%q is not a CPU list: %v (use %s)", value, err, words)
		return affinity.CPUSet{}, false
	}
	return set, true
}

// overlaps reports every pair of explicit lists that share CPUs: a CPU
// given to two purposes is a mistake, never a way to share.
func (v *configValidator) overlaps(lists map[string]affinity.CPUSet, order []string) {
	for i, a := range order {
		for _, b := range order[i+1:] {
			if both := lists[a].Intersect(lists[b]); !both.IsEmpty() {
				v.errorf(b, "%q overlaps %s %q on CPUs %q (give each its own CPUs)", lists[b], a, lists[a], both)
			}
		}
	}
}

// gpus checks infer.gpus entries: indexes or UUIDs, each listed once.
func (v *configValidator) gpus(g GPUSelection) {
	seen := map[string]int{}
	for i, d := range g.Devices {
		field := fmt.Sprintf("infer.gpus[%d]", i)
		if n, err := strconv.Atoi(d); (err != nil || n < 0) && !strings.HasPrefix(d, "GPU-") && !strings.HasPrefix(d, "MIG-") {
			v.errorf(field, "%q is neither a GPU index (0, 1, … as nvidia-smi numbers them) nor a UUID (GPU-…, as nvidia-smi -L shows)", d)
			continue
		}
		if j, dup := seen[d]; dup {
			v.errorf(field, "%q is already infer.gpus[%d] (list each GPU once)", d, j)
		}
		seen[d] = i
	}
	if len(g.Devices) > maxInferWorkers {
		v.errorf("infer.gpus", "%d GPUs listed; at most %d infer workers are supported", len(g.Devices), maxInferWorkers)
	}
}
