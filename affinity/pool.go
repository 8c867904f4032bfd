package affinity

import "sort"

// The allocator below hands out CPUs from a free set in core order, so
// hyper-thread siblings end up in the same worker and a worker stays on one
// NUMA node whenever one node can hold it. It is deterministic: the same
// topology and free set always give the same answer.

// nodeOrder returns the node ids to try: pref first when it has free CPUs,
// then the others by most free CPUs, lowest id on a tie.
func (t *Topology) nodeOrder(free CPUSet, pref int) []int {
	var ids []int
	for _, n := range t.Nodes {
		if n.ID != pref && !n.CPUs.Intersect(free).IsEmpty() {
			ids = append(ids, n.ID)
		}
	}
	sort.SliceStable(ids, func(i, j int) bool {
		return t.nodeCPUs(ids[i]).Intersect(free).Count() > t.nodeCPUs(ids[j]).Intersect(free).Count()
	})
	if !t.nodeCPUs(pref).Intersect(free).IsEmpty() {
		ids = append([]int{pref}, ids...)
	}
	return ids
}

// firstFree returns the first n free CPUs of a node in core order; fewer
// when the node has fewer. node -1 means every node, in order.
func (t *Topology) firstFree(free CPUSet, node, n int) CPUSet {
	var got CPUSet
	for _, c := range t.Cores {
		if node != -1 && c.Node != node {
			continue
		}
		for _, cpu := range c.CPUs.Intersect(free).Slice() {
			if got.Count() == n {
				return got
			}
			got = got.Union(NewCPUSet(cpu))
		}
	}
	return got
}

// takeCore removes from *free the free CPUs of one core, on node pref if
// it has any, else on the node with most free CPUs. ok is false when
// nothing is free.
func (t *Topology) takeCore(free *CPUSet, pref int) (CPUSet, bool) {
	for _, node := range t.nodeOrder(*free, pref) {
		for _, c := range t.Cores {
			if got := c.CPUs.Intersect(*free); c.Node == node && !got.IsEmpty() {
				*free = free.Minus(got)
				return got, true
			}
		}
	}
	return CPUSet{}, false
}

// takeCores removes k cores, keeping them on the node of the first one
// while that node has free cores.
func (t *Topology) takeCores(free *CPUSet, pref, k int) (CPUSet, bool) {
	var got CPUSet
	for i := 0; i < k; i++ {
		c, ok := t.takeCore(free, pref)
		if !ok {
			*free = free.Union(got)
			return CPUSet{}, false
		}
		if i == 0 {
			pref = t.NodeOf(c.First())
		}
		got = got.Union(c)
	}
	return got, true
}

// takeCPUs removes n CPUs from *free: from node pref when it has n free,
// else from the first node that has, else spread over nodes in order.
// ok is false, and *free unchanged, when fewer than n are free.
func (t *Topology) takeCPUs(free *CPUSet, pref, n int) (CPUSet, bool) {
	if n <= 0 || free.Count() < n {
		return CPUSet{}, false
	}
	got := CPUSet{}
	for _, node := range t.nodeOrder(*free, pref) {
		if t.nodeCPUs(node).Intersect(*free).Count() >= n {
			got = t.firstFree(*free, node, n)
			break
		}
	}
	if got.IsEmpty() {
		for _, node := range t.nodeOrder(*free, pref) {
			got = got.Union(t.firstFree(free.Minus(got), node, n-got.Count()))
		}
	}
	*free = free.Minus(got)
	return got, true
}

// take removes one worker's share: n CPUs, or one core when n is 0.
func (t *Topology) take(free *CPUSet, pref, n int) (CPUSet, bool) {
	if n == 0 {
		return t.takeCore(free, pref)
	}
	return t.takeCPUs(free, pref, n)
}

// freeCores counts the cores with at least one CPU in free.
func (t *Topology) freeCores(free CPUSet) int {
	n := 0
	for _, c := range t.Cores {
		if !c.CPUs.Intersect(free).IsEmpty() {
			n++
		}
	}
	return n
}
