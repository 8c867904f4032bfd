package affinity

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Role is what a worker does.
type Role string

const (
	RoleInfer Role = "infer" // runs the model; one per GPU
	RolePrep  Role = "prep"  // decodes and preprocesses requests on CPUs
)

// Auto, as a value in Request.CPUs, leaves the choice to the planner, as
// does the empty string.
const Auto = "auto"

// Errors Plan wraps (inside a *PlanError), for callers that use errors.Is.
var (
	// ErrOverlap: two explicit cpus lists share CPUs.
	ErrOverlap = errors.New("explicit cpus overlap")
	// ErrNoFit: an explicit request needs more CPUs than are left.
	ErrNoFit = errors.New("request does not fit the CPUs")
)

// Request is what the config asks of the plan. The zero value is a valid
// request: everything automatic.
type Request struct {
	// Reserve is how many CPUs the master and its load balancer keep for
	// themselves, rounded up to whole cores so that no worker shares a core
	// with the master. 0 means automatic: one core when at least 4 CPUs are
	// usable, none below that, where a reserved core would take a quarter
	// or more of the machine from the workers. Negative means none.
	Reserve int
	// Infer is the number of infer workers on a host without GPUs; 0 means
	// one. With GPUs there is exactly one per GPU and Infer must be 0 or
	// the number of GPUs.
	Infer int
	// InferCPUs is the number of CPUs per infer worker. 0 means one core
	// for a GPU's worker, which only feeds the device; on a CPU-only host,
	// where the infer worker does the model's math, it means half of the
	// cores left after the reservation (all of the "infer" pool when one
	// is given), split evenly between the infer workers, at least one core
	// each.
	InferCPUs int
	// Prep is the number of prep workers; 0 means one per share of the
	// CPUs left after the reservation and the infer workers, and at least
	// one.
	Prep int
	// PrepCPUs is the number of CPUs per prep worker; 0 means one core
	// (its hyper-thread siblings together).
	PrepCPUs int
	// Overcommit lets workers whose count or size was given (Infer, Prep,
	// InferCPUs, PrepCPUs) but whose CPUs were not share CPUs, marked
	// Shared, when the machine runs out, instead of failing with ErrNoFit.
	// Explicit cpus lists and the reservation stay strict.
	Overcommit bool
	// CPUs pins explicitly. Keys are "master" (the reserved CPUs), a role,
	// "infer" or "prep" (the CPUs that role's automatically placed workers
	// draw from), or a worker name: "infer-<GPU index>" ("infer-<n>" on a
	// CPU-only host) or "prep-<n>". Values are a CPU list such as "4-7,12"
	// or Auto. Explicit lists must be usable CPUs and must not overlap,
	// except that a worker's list may lie inside its own role's pool.
	CPUs map[string]string
}

// Assignment is where one worker runs.
type Assignment struct {
	Name string // "infer-0", "prep-3"
	Role Role
	// GPU is the infer worker's device; nil for prep workers and on
	// CPU-only hosts.
	GPU  *GPU
	CPUs CPUSet
	// NUMANode is the node all of CPUs lie on, or -1 when they span nodes.
	NUMANode int
	// Shared is set when the planner ran out of CPUs for a worker nobody
	// asked for explicitly and let it float over CPUs other workers use.
	Shared bool
}

// Placement is a plan: the reserved CPUs and one assignment per worker,
// infer workers first, then prep workers, each in index order.
type Placement struct {
	// Reserved are the CPUs no worker is given, for the master and its lb.
	// Empty when nothing is reserved; the master then runs anywhere.
	Reserved CPUSet
	Workers  []Assignment
}

// Plan decides which workers run where. It is a pure function of its
// arguments. Its rules:
//
//   - CPUs are reserved for the master (see Request.Reserve), on the
//     first core(s) of the first node: CPU 0 already carries most IRQs.
//   - Each GPU gets one infer worker, on a core of the GPU's NUMA node
//     (from GPU.NUMANode, else from GPU.CPUs).
//   - Prep workers take the rest, one core each by default, assigned in
//     turn to the nodes of the GPUs they feed so they spread evenly over
//     the GPUs' nodes.
//   - Explicit cpus lists are taken as they are; they must be usable and
//     must not overlap (ErrOverlap names both workers and the CPUs).
//   - When CPUs run out: a worker whose size or count was asked for
//     explicitly is an error (ErrNoFit) unless Request.Overcommit is set;
//     otherwise the worker is marked
//     Shared and floats over the unreserved CPUs of its node (all unreserved
//     CPUs for prep workers). So a 2-CPU VM or a host with more GPUs than
//     cores still gets a plan, and one that says so.
func Plan(topo *Topology, gpus []GPU, req Request) (*Placement, error) {
	p, err := newPlanner(topo, gpus, req)
	if err != nil {
		return nil, err
	}
	for _, step := range []func() error{p.reserve, p.placeInfer, p.placePrep} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return &Placement{Reserved: p.reserved, Workers: p.out}, nil
}

// planner is the state of one Plan call.
type planner struct {
	topo     *Topology
	gpus     []GPU
	req      Request
	explicit map[string]CPUSet // by worker name, "master", "infer", "prep"
	free     CPUSet            // CPUs in no explicit list and not yet given out
	pools    map[Role]*CPUSet  // what is left of an explicit role pool
	reserved CPUSet
	out      []Assignment
}

func newPlanner(topo *Topology, gpus []GPU, req Request) (*planner, error) {
	if topo == nil || len(topo.Nodes) == 0 || len(topo.Cores) == 0 {
		return nil, &PlanError{Err: errors.New("cannot plan on an empty topology: LoadTopology found no usable CPUs")}
	}
	p := &planner{topo: topo, req: req, explicit: map[string]CPUSet{}, pools: map[Role]*CPUSet{}}
	p.gpus = append([]GPU(nil), gpus...)
	sort.SliceStable(p.gpus, func(i, j int) bool { return p.gpus[i].Index < p.gpus[j].Index })
	for i := 1; i < len(p.gpus); i++ {
		if p.gpus[i].Index == p.gpus[i-1].Index {
			return nil, &PlanError{Err: fmt.Errorf("GPU index %d is listed twice (%s and %s)", p.gpus[i].Index, p.gpus[i-1].UUID, p.gpus[i].UUID)}
		}
	}
	if err := p.parseExplicit(); err != nil {
		return nil, err
	}
	if err := p.checkOverlaps(); err != nil {
		return nil, err
	}
	p.free = topo.CPUs
	for _, set := range p.explicit {
		p.free = p.free.Minus(set)
	}
	for _, r := range []Role{RoleInfer, RolePrep} {
		if set, ok := p.explicit[string(r)]; ok {
			left := set
			for key, w := range p.explicit {
				if roleOf(key) == r && key != string(r) {
					left = left.Minus(w)
				}
			}
			p.pools[r] = &left
		}
	}
	return p, nil
}

// parseExplicit validates Request.CPUs.
func (p *planner) parseExplicit() error {
	for _, key := range sortedStrings(p.req.CPUs) {
		val := strings.TrimSpace(p.req.CPUs[key])
		if val == "" || val == Auto {
			continue
		}
		if key != "master" && roleOf(key) == "" {
			return cpusError(key, fmt.Errorf("unknown cpus key %q: want master, infer, prep, infer-<n> or prep-<n>", key))
		}
		set, err := ParseCPUList(val)
		if err != nil {
			return cpusError(key, fmt.Errorf("cpus for %s: %w", key, err))
		}
		if set.IsEmpty() {
			return cpusError(key, fmt.Errorf("cpus for %s: the list is empty; write %q to let the planner choose", key, Auto))
		}
		if bad := set.Minus(p.topo.CPUs); !bad.IsEmpty() {
			return cpusError(key, fmt.Errorf("%w: cpus %q for %s include %q, which this process may not use (usable: %q)", ErrNoFit, set, key, bad, p.topo.CPUs))
		}
		p.explicit[key] = set
	}
	return nil
}

// checkOverlaps reports the first pair of explicit lists sharing CPUs.
func (p *planner) checkOverlaps() error {
	keys := sortedStrings(p.explicit)
	for i, a := range keys {
		for _, b := range keys[i+1:] {
			if a == string(roleOf(b)) || b == string(roleOf(a)) {
				continue // a worker inside its own role's pool
			}
			if both := p.explicit[a].Intersect(p.explicit[b]); !both.IsEmpty() {
				return &PlanError{Err: fmt.Errorf("%w: %s (cpus %q) and %s (cpus %q) both have CPUs %q", ErrOverlap, a, p.explicit[a], b, p.explicit[b], both)}
			}
		}
	}
	return nil
}

// roleOf returns the role a cpus key belongs to: "infer" for "infer" and
// "infer-3", "" for anything else.
func roleOf(key string) Role {
	for _, r := range []Role{RoleInfer, RolePrep} {
		if key == string(r) {
			return r
		}
		if n, ok := strings.CutPrefix(key, string(r)+"-"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 && strconv.Itoa(i) == n {
				return r
			}
		}
	}
	return ""
}

func sortedStrings[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// reserve sets aside the master's CPUs.
func (p *planner) reserve() error {
	if set, ok := p.explicit["master"]; ok {
		p.reserved = set
		return nil
	}
	n := p.req.Reserve
	if n == 0 && p.topo.CPUs.Count() >= 4 {
		n = 1
	}
	for p.reserved.Count() < n {
		core, ok := p.topo.takeCore(&p.free, p.topo.Nodes[0].ID)
		if !ok {
			if p.req.Reserve > 0 {
				return &PlanError{Field: FieldReserve, Err: fmt.Errorf("%w: reserving %d CPUs for the master, only %q were free", ErrNoFit, n, p.reserved)}
			}
			break
		}
		p.reserved = p.reserved.Union(core)
	}
	return nil
}

// shareable is what a worker that found no free CPUs floats over.
func (p *planner) shareable(node int) CPUSet {
	set := p.topo.CPUs.Minus(p.reserved)
	if set.IsEmpty() {
		set = p.topo.CPUs
	}
	if onNode := set.Intersect(p.topo.nodeCPUs(node)); !onNode.IsEmpty() {
		return onNode
	}
	return set
}

// source is where a role's automatically placed workers take CPUs from.
func (p *planner) source(r Role) *CPUSet {
	if pool, ok := p.pools[r]; ok {
		return pool
	}
	return &p.free
}

// assign appends a worker, explicit or taken from the role's source.
func (p *planner) assign(a Assignment, pref int, take func(*CPUSet, int) (CPUSet, bool), strict bool, need string) error {
	if set, ok := p.explicit[a.Name]; ok {
		a.CPUs = set
	} else if set, ok := take(p.source(a.Role), pref); ok {
		a.CPUs = set
	} else if strict && !p.req.Overcommit {
		return &PlanError{Field: FieldSize, Worker: a.Name, Role: a.Role,
			Err: fmt.Errorf("%w: %s needs %s but %s (usable: %q, reserved for the master: %q)", ErrNoFit, a.Name, need, leftWords(*p.source(a.Role)), p.topo.CPUs, p.reserved)}
	} else {
		a.CPUs, a.Shared = p.shareable(pref), true
	}
	a.NUMANode = p.topo.majorityNode(a.CPUs)
	if !a.CPUs.Minus(p.topo.nodeCPUs(a.NUMANode)).IsEmpty() {
		a.NUMANode = -1
	}
	p.out = append(p.out, a)
	return nil
}

// sizeWords describes a share for error messages.
func sizeWords(n int) string {
	switch n {
	case 0:
		return "a core"
	case 1:
		return "1 CPU"
	}
	return fmt.Sprintf("%d CPUs", n)
}

// leftWords describes what is left for error messages.
func leftWords(left CPUSet) string {
	if left.IsEmpty() {
		return "no CPUs are left"
	}
	return fmt.Sprintf("only CPUs %q are left", left)
}
