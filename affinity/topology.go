package affinity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Topology is the part of the machine the process may run on: the online
// CPUs in its allowed set, grouped into cores (hyper-thread siblings),
// packages (sockets) and NUMA nodes. CPUs outside the allowed set appear
// nowhere but in Online, so a plan made from a Topology never uses them.
type Topology struct {
	// Online is every online CPU, from devices/system/cpu/online.
	Online CPUSet
	// CPUs is Online intersected with the allowed set: the usable CPUs.
	CPUs CPUSet
	// Cores are the usable cores, ordered by NUMA node then lowest CPU.
	// A core's CPUs are its usable hyper-thread siblings.
	Cores []Core
	// Packages are the physical packages with usable CPUs, by id.
	Packages []Package
	// Nodes are the NUMA nodes with usable CPUs, by id. Memory-only nodes
	// and nodes outside the allowed set are left out.
	Nodes []Node
}

// Core is one physical core: the hyper-thread siblings that share it.
type Core struct {
	ID      int // core_id, unique only within its package
	Package int // physical_package_id
	Node    int // NUMA node
	CPUs    CPUSet
}

// Package is one physical package (socket).
type Package struct {
	ID   int
	CPUs CPUSet
}

// Node is one NUMA node.
type Node struct {
	ID   int
	CPUs CPUSet
}

// LoadTopology reads the CPU topology under sysRoot ("" means /sys):
//
//   - devices/system/cpu/online for the online CPUs;
//   - devices/system/cpu/cpuN/topology/core_cpus_list (thread_siblings_list
//     on kernels before 5.5), core_id and physical_package_id for each;
//     a CPU without a topology directory is taken as its own core in
//     package 0;
//   - devices/system/node/nodeN/cpulist for NUMA nodes; without a
//     devices/system/node directory (CONFIG_NUMA off) all CPUs are node 0.
//
// allowed is the set the process may run on, normally AllowedCPUs(); the
// empty set means no restriction. It is an error when allowed shares no CPU
// with the online set.
func LoadTopology(sysRoot string, allowed CPUSet) (*Topology, error) {
	cpuDir := filepath.Join(sysRootOr(sysRoot), "devices", "system", "cpu")
	online, err := readCPUList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	usable := online
	if !allowed.IsEmpty() {
		usable = online.Intersect(allowed)
	}
	if usable.IsEmpty() {
		return nil, fmt.Errorf("none of the allowed CPUs %q is online (online: %q)", allowed, online)
	}
	nodeOf, err := loadNodes(filepath.Join(sysRootOr(sysRoot), "devices", "system", "node"), usable)
	if err != nil {
		return nil, err
	}
	cores, err := loadCores(cpuDir, usable, nodeOf)
	if err != nil {
		return nil, err
	}
	return newTopology(online, usable, cores), nil
}

// loadNodes maps each usable CPU to its NUMA node from
// devices/system/node/nodeN/cpulist.
func loadNodes(nodeDir string, usable CPUSet) (map[int]int, error) {
	nodeOf := make(map[int]int)
	dirs, err := filepath.Glob(filepath.Join(nodeDir, "node[0-9]*"))
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		for _, cpu := range usable.Slice() {
			nodeOf[cpu] = 0
		}
		return nodeOf, nil
	}
	for _, dir := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue // not a node directory, e.g. "node_foo"
		}
		cpus, err := readCPUList(filepath.Join(dir, "cpulist"))
		if err != nil {
			return nil, err
		}
		for _, cpu := range cpus.Intersect(usable).Slice() {
			nodeOf[cpu] = id
		}
	}
	for _, cpu := range usable.Slice() {
		if _, ok := nodeOf[cpu]; !ok {
			return nil, fmt.Errorf("CPU %d is online but in no %q", cpu, filepath.Join(nodeDir, "node*", "cpulist"))
		}
	}
	return nodeOf, nil
}

// loadCores groups the usable CPUs into cores from each CPU's
// devices/system/cpu/cpuN/topology directory.
func loadCores(cpuDir string, usable CPUSet, nodeOf map[int]int) ([]Core, error) {
	var cores []Core
	seen := CPUSet{}
	for _, cpu := range usable.Slice() {
		if seen.Contains(cpu) {
			continue
		}
		c, err := loadCore(filepath.Join(cpuDir, "cpu"+strconv.Itoa(cpu), "topology"), cpu)
		if err != nil {
			return nil, err
		}
		c.CPUs = c.CPUs.Intersect(usable).Minus(seen)
		c.Node = nodeOf[cpu]
		seen = seen.Union(c.CPUs)
		cores = append(cores, c)
	}
	return cores, nil
}

// loadCore reads one CPU's core_cpus_list (or thread_siblings_list),
// core_id and physical_package_id.
func loadCore(dir string, cpu int) (Core, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return Core{ID: cpu, CPUs: NewCPUSet(cpu)}, nil
	}
	siblings, err := readCPUList(filepath.Join(dir, "core_cpus_list"))
	if errors.Is(err, fs.ErrNotExist) {
		siblings, err = readCPUList(filepath.Join(dir, "thread_siblings_list"))
	}
	if err != nil {
		return Core{}, err
	}
	if !siblings.Contains(cpu) {
		return Core{}, fmt.Errorf("%q lists siblings %q without CPU %d itself", dir, siblings, cpu)
	}
	id, err := readInt(filepath.Join(dir, "core_id"))
	if err != nil {
		return Core{}, err
	}
	pkg, err := readInt(filepath.Join(dir, "physical_package_id"))
	if err != nil {
		return Core{}, err
	}
	return Core{ID: id, Package: pkg, CPUs: siblings}, nil
}

// newTopology orders the cores and derives packages and nodes from them.
func newTopology(online, usable CPUSet, cores []Core) *Topology {
	sort.SliceStable(cores, func(i, j int) bool {
		if cores[i].Node != cores[j].Node {
			return cores[i].Node < cores[j].Node
		}
		return cores[i].CPUs.First() < cores[j].CPUs.First()
	})
	pkgs := map[int]CPUSet{}
	nodes := map[int]CPUSet{}
	for _, c := range cores {
		pkgs[c.Package] = pkgs[c.Package].Union(c.CPUs)
		nodes[c.Node] = nodes[c.Node].Union(c.CPUs)
	}
	t := &Topology{Online: online, CPUs: usable, Cores: cores}
	for _, id := range sortedKeys(pkgs) {
		t.Packages = append(t.Packages, Package{ID: id, CPUs: pkgs[id]})
	}
	for _, id := range sortedKeys(nodes) {
		t.Nodes = append(t.Nodes, Node{ID: id, CPUs: nodes[id]})
	}
	return t
}

func sortedKeys(m map[int]CPUSet) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// NodeOf returns the NUMA node of a usable CPU, or -1.
func (t *Topology) NodeOf(cpu int) int {
	for _, n := range t.Nodes {
		if n.CPUs.Contains(cpu) {
			return n.ID
		}
	}
	return -1
}

// nodeCPUs returns the usable CPUs of a node; empty for an unknown node.
func (t *Topology) nodeCPUs(id int) CPUSet {
	for _, n := range t.Nodes {
		if n.ID == id {
			return n.CPUs
		}
	}
	return CPUSet{}
}

// majorityNode returns the node holding most of cpus (lowest id on a tie),
// or -1 when cpus has no usable CPU.
func (t *Topology) majorityNode(cpus CPUSet) int {
	best, bestN := -1, 0
	for _, n := range t.Nodes {
		if c := n.CPUs.Intersect(cpus).Count(); c > bestN {
			best, bestN = n.ID, c
		}
	}
	return best
}
