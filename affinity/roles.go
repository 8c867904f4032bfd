package affinity

import "fmt"

// placeInfer places the infer workers: one per GPU, or Request.Infer
// (default one) on a CPU-only host.
func (p *planner) placeInfer() error {
	if len(p.gpus) == 0 {
		return p.placeCPUInfer()
	}
	if p.req.Infer != 0 && p.req.Infer != len(p.gpus) {
		return &PlanError{Field: FieldInfer, Err: fmt.Errorf("infer workers: %d requested but the host has %d GPUs and runs one per GPU; leave the count at 0", p.req.Infer, len(p.gpus))}
	}
	if err := p.checkNames(RoleInfer, func(i int) bool { return p.gpuByIndex(i) != nil }); err != nil {
		return err
	}
	n := p.req.InferCPUs
	take := func(free *CPUSet, pref int) (CPUSet, bool) { return p.topo.take(free, pref, n) }
	for i := range p.gpus {
		g := &p.gpus[i]
		a := Assignment{Name: fmt.Sprintf("infer-%d", g.Index), Role: RoleInfer, GPU: g}
		if err := p.assign(a, p.gpuNode(*g), take, n > 0, sizeWords(n)); err != nil {
			return err
		}
	}
	return nil
}

// placeCPUInfer places infer workers on a host without GPUs, where they
// run the model on the CPU provider and so get the bigger share.
func (p *planner) placeCPUInfer() error {
	count := max(p.req.Infer, 1)
	if err := p.checkNames(RoleInfer, func(i int) bool { return i < count }); err != nil {
		return err
	}
	n, need := p.req.InferCPUs, sizeWords(p.req.InferCPUs)
	take := func(free *CPUSet, pref int) (CPUSet, bool) { return p.topo.take(free, pref, n) }
	if n == 0 {
		cores := p.topo.freeCores(*p.source(RoleInfer))
		if _, ok := p.pools[RoleInfer]; !ok {
			cores /= 2
		}
		k := max(1, cores/count)
		need = fmt.Sprintf("%d cores", k)
		take = func(free *CPUSet, pref int) (CPUSet, bool) { return p.topo.takeCores(free, pref, k) }
	}
	strict := p.req.Infer > 0 || p.req.InferCPUs > 0
	for i := 0; i < count; i++ {
		a := Assignment{Name: fmt.Sprintf("infer-%d", i), Role: RoleInfer}
		if err := p.assign(a, -1, take, strict, need); err != nil {
			return err
		}
	}
	return nil
}

// placePrep places the prep workers over what the infer workers left.
func (p *planner) placePrep() error {
	n := p.req.PrepCPUs
	count := p.req.Prep
	if count == 0 {
		named := 0
		for key := range p.explicit {
			if roleOf(key) == RolePrep && key != string(RolePrep) {
				named++
			}
		}
		src := *p.source(RolePrep)
		if n > 0 {
			count = named + src.Count()/n
		} else {
			count = named + p.topo.freeCores(src)
		}
		count = max(count, 1)
	}
	if err := p.checkNames(RolePrep, func(i int) bool { return i < count }); err != nil {
		return err
	}
	take := func(free *CPUSet, pref int) (CPUSet, bool) { return p.topo.take(free, pref, n) }
	strict := p.req.Prep > 0 || p.req.PrepCPUs > 0
	feeds := p.feedNodes()
	for i, auto := 0, 0; i < count; i++ {
		a := Assignment{Name: fmt.Sprintf("prep-%d", i), Role: RolePrep}
		pref := -1
		if _, ok := p.explicit[a.Name]; !ok && len(feeds) > 0 {
			pref = feeds[auto%len(feeds)]
			auto++
		}
		if err := p.assign(a, pref, take, strict, sizeWords(n)); err != nil {
			return err
		}
	}
	return nil
}

// feedNodes returns one NUMA node per GPU, interleaving nodes (0,1,0,1…
// for four GPUs on each of two nodes) so that any number of prep workers
// assigned in turn spreads evenly over the GPUs' nodes.
func (p *planner) feedNodes() []int {
	var order []int
	byNode := map[int]int{}
	for _, g := range p.gpus {
		node := p.gpuNode(g)
		if node < 0 {
			continue
		}
		if byNode[node] == 0 {
			order = append(order, node)
		}
		byNode[node]++
	}
	var seq []int
	for len(seq) < len(p.gpus) && len(order) > 0 {
		next := order[:0:0]
		for _, node := range order {
			seq = append(seq, node)
			if byNode[node]--; byNode[node] > 0 {
				next = append(next, node)
			}
		}
		order = next
	}
	return seq
}

// gpuNode returns the NUMA node to place a GPU's worker on: the device's
// own node when known and usable, else the node holding most of its local
// CPUs, else -1 (no preference).
func (p *planner) gpuNode(g GPU) int {
	if g.NUMANode >= 0 && !p.topo.nodeCPUs(g.NUMANode).IsEmpty() {
		return g.NUMANode
	}
	return p.topo.majorityNode(g.CPUs)
}

func (p *planner) gpuByIndex(i int) *GPU {
	for k := range p.gpus {
		if p.gpus[k].Index == i {
			return &p.gpus[k]
		}
	}
	return nil
}

// checkNames rejects explicit cpus for workers of role r that the plan
// does not have, such as prep-9 when there are 4 prep workers.
func (p *planner) checkNames(r Role, exists func(int) bool) error {
	for _, key := range sortedStrings(p.explicit) {
		if roleOf(key) != r || key == string(r) {
			continue
		}
		var i int
		fmt.Sscanf(key[len(r)+1:], "%d", &i)
		if !exists(i) {
			return cpusError(key, fmt.Errorf("cpus given for %s, but the plan has no such worker", key))
		}
	}
	return nil
}
