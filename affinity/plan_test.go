package affinity

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGPUs returns n H100s; on numa2x32 their NUMA nodes come from the
// fake tree's bus/pci/devices/*/numa_node, elsewhere they are unknown.
func fakeGPUs(t *testing.T, host string, n int) []GPU {
	t.Helper()
	buses := []string{"0000:18:00.0", "0000:2a:00.0", "0000:3b:00.0", "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"}
	var gpus []GPU
	for i := 0; i < n; i++ {
		bus := buses[i%len(buses)]
		node, err := PCINUMANode(filepath.Join("testdata", host), bus)
		if err != nil {
			t.Fatal(err)
		}
		gpus = append(gpus, GPU{
			Index: i, UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i), Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: bus, MemoryBytes: 80 << 30, NUMANode: node,
		})
	}
	return gpus
}

type planCase struct {
	name, host, allowed string
	gpus                int
	req                 Request
	reserved            string
	want                []string // "name cpus [node] [shared]" per worker, in order
}

func (tc planCase) plan(t *testing.T) (*Placement, error) {
	t.Helper()
	return Plan(loadFake(t, tc.host, tc.allowed), fakeGPUs(t, tc.host, tc.gpus), tc.req)
}

// describe renders one assignment as the tables below write it.
func describe(a Assignment) string {
	s := fmt.Sprintf("%s %s node%d", a.Name, a.CPUs, a.NUMANode)
	if a.GPU != nil {
		s += fmt.Sprintf(" gpu%d", a.GPU.Index)
	}
	if a.Shared {
		s += " shared"
	}
	return s
}

func prepRange(first, count, cpu0, sibling0, node int) []string {
	var out []string
	for i := 0; i < count; i++ {
		out = append(out, fmt.Sprintf("prep-%d %d,%d node%d", first+i, cpu0+i, sibling0+i, node))
	}
	return out
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []planCase{{
		name: "2-CPU VM, no GPU", host: "vm2",
		want: []string{"infer-0 0 node0", "prep-0 1 node0"},
	}, {
		name: "2-CPU VM, one GPU", host: "vm2", gpus: 1,
		want: []string{"infer-0 0 node0 gpu0", "prep-0 1 node0"},
	}, {
		name: "1 CPU (VM restricted to CPU 0): everything shares", host: "vm2", allowed: "0",
		want: []string{"infer-0 0 node0", "prep-0 0 node0 shared"},
	}, {
		name: "16 cores with SMT, no GPU", host: "smt16", reserved: "0,16",
		want: concat([]string{"infer-0 1-7,17-23 node0"}, prepRange(0, 8, 8, 24, 0)),
	}, {
		name: "16 cores with SMT, 2 GPUs", host: "smt16", gpus: 2, reserved: "0,16",
		want: concat([]string{"infer-0 1,17 node0 gpu0", "infer-1 2,18 node0 gpu1"}, prepRange(0, 13, 3, 19, 0)),
	}, {
		// 26 CPUs left for 3-CPU prep workers: 8 of them, siblings adjacent,
		// and core 15 (15,31) left idle rather than given a short worker.
		name: "16 cores with SMT, 3 CPUs per prep worker", host: "smt16", reserved: "0,16",
		req: Request{Infer: 1, InferCPUs: 4, PrepCPUs: 3},
		want: []string{"infer-0 1-2,17-18 node0",
			"prep-0 3-4,19 node0", "prep-1 5,20-21 node0", "prep-2 6-7,22 node0", "prep-3 8,23-24 node0",
			"prep-4 9-10,25 node0", "prep-5 11,26-27 node0", "prep-6 12-13,28 node0", "prep-7 14,29-30 node0"},
	}, {
		name: "taskset 0-5 on 16 cores, no GPU: no siblings allowed", host: "smt16", allowed: "0-5", reserved: "0",
		want: []string{"infer-0 1-2 node0", "prep-0 3 node0", "prep-1 4 node0", "prep-2 5 node0"},
	}, {
		name: "taskset 0-5 on 16 cores, one GPU", host: "smt16", allowed: "0-5", gpus: 1, reserved: "0",
		want: []string{"infer-0 1 node0 gpu0", "prep-0 2 node0", "prep-1 3 node0", "prep-2 4 node0", "prep-3 5 node0"},
	}, {
		name: "more GPUs than cores: infer workers share their node", host: "vm2", gpus: 4,
		want: []string{"infer-0 0 node0 gpu0", "infer-1 1 node0 gpu1", "infer-2 0-1 node0 gpu2 shared", "infer-3 0-1 node0 gpu3 shared", "prep-0 0-1 node0 shared"},
	}, {
		name: "2-CPU VM, counts larger than the machine, overcommit", host: "vm2",
		req:  Request{Infer: 1, Prep: 2, Overcommit: true},
		want: []string{"infer-0 0 node0", "prep-0 1 node0", "prep-1 0-1 node0 shared"},
	}, {
		name: "explicit cpus lists", host: "smt16", reserved: "0",
		req: Request{CPUs: map[string]string{"master": "0", "infer": "1-3", "prep": "4-15", "prep-2": "5", "infer-0": "auto"}},
		want: []string{"infer-0 1-3 node0", "prep-0 4 node0", "prep-1 6 node0", "prep-2 5 node0", "prep-3 7 node0", "prep-4 8 node0", "prep-5 9 node0",
			"prep-6 10 node0", "prep-7 11 node0", "prep-8 12 node0", "prep-9 13 node0", "prep-10 14 node0", "prep-11 15 node0"},
	}, {
		name: "reservation off, 4 prep workers", host: "smt16", gpus: 1,
		req:  Request{Reserve: -1, Prep: 4},
		want: []string{"infer-0 0,16 node0 gpu0", "prep-0 1,17 node0", "prep-1 2,18 node0", "prep-2 3,19 node0", "prep-3 4,20 node0"},
	}, {
		name: "2 sockets x 32 cores, 8 GPUs, 4 prep workers spread over both nodes", host: "numa2x32", gpus: 8, reserved: "0,64",
		req: Request{Prep: 4},
		want: []string{
			"infer-0 1,65 node0 gpu0", "infer-1 2,66 node0 gpu1", "infer-2 3,67 node0 gpu2", "infer-3 4,68 node0 gpu3",
			"infer-4 32,96 node1 gpu4", "infer-5 33,97 node1 gpu5", "infer-6 34,98 node1 gpu6", "infer-7 35,99 node1 gpu7",
			"prep-0 5,69 node0", "prep-1 36,100 node1", "prep-2 6,70 node0", "prep-3 37,101 node1",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.plan(t)
			if err != nil {
				t.Fatal(err)
			}
			var have []string
			for _, a := range p.Workers {
				have = append(have, describe(a))
			}
			if p.Reserved.String() != tc.reserved || strings.Join(have, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("reserved %q, workers:\n%s\nwant reserved %q, workers:\n%s\nplan:\n%s",
					p.Reserved, strings.Join(have, "\n"), tc.reserved, strings.Join(tc.want, "\n"), p)
			}
			checkInvariants(t, loadFake(t, tc.host, tc.allowed), p)
		})
	}
}

// TestPlanNUMA8GPUs checks the automatic plan of the big host by its
// properties: 55 prep workers, one core each, spread over both nodes.
func TestPlanNUMA8GPUs(t *testing.T) {
	topo := loadFake(t, "numa2x32", "")
	p, err := Plan(topo, fakeGPUs(t, "numa2x32", 8), Request{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, topo, p)
	perNode := map[int]int{}
	for i, a := range p.Workers {
		if a.Shared || a.NUMANode < 0 || a.CPUs.Count() != 2 {
			t.Errorf("%s: %+v, want a whole core of its own on one node", a.Name, a)
		}
		if a.Role == RoleInfer && a.NUMANode != a.GPU.NUMANode {
			t.Errorf("%s on node %d feeds GPU %d on node %d", a.Name, a.NUMANode, a.GPU.Index, a.GPU.NUMANode)
		}
		if a.Role == RolePrep {
			perNode[a.NUMANode]++
			if want := fmt.Sprintf("prep-%d", i-8); a.Name != want {
				t.Errorf("worker %d is %s, want %s", i, a.Name, want)
			}
		}
	}
	if len(p.Workers) != 8+55 || perNode[0] != 27 || perNode[1] != 28 {
		t.Errorf("%d workers, prep per node %v; want 63 workers, 27 prep on node 0 and 28 on node 1", len(p.Workers), perNode)
	}
	if !strings.Contains(p.Workers[9].CPUs.String(), "36,100") {
		t.Errorf("prep-1 on %q, want the first free core of node 1 (36,100)", p.Workers[9].CPUs)
	}
}

// checkInvariants: every CPU usable; workers of their own are disjoint
// from each other and from the reserved CPUs.
func checkInvariants(t *testing.T, topo *Topology, p *Placement) {
	t.Helper()
	taken := p.Reserved
	for _, a := range p.Workers {
		if a.CPUs.IsEmpty() || !a.CPUs.Minus(topo.CPUs).IsEmpty() {
			t.Errorf("%s has CPUs %q, outside the usable %q", a.Name, a.CPUs, topo.CPUs)
		}
		if a.Shared {
			continue
		}
		if both := taken.Intersect(a.CPUs); !both.IsEmpty() {
			t.Errorf("%s shares CPUs %q with an earlier worker or the master", a.Name, both)
		}
		taken = taken.Union(a.CPUs)
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		planCase
		is   error
		want []string  // substrings of the message
		pe   PlanError // Field, Key, Worker and Role of the *PlanError
	}{{
		planCase: planCase{name: "explicit cpus overlap", host: "smt16",
			req: Request{CPUs: map[string]string{"prep-0": "4-5", "prep-1": "5-6"}}},
		is: ErrOverlap, want: []string{"prep-0", "prep-1", `CPUs "5"`}, pe: PlanError{Field: FieldHost},
	}, {
		planCase: planCase{name: "worker overlaps another role's pool", host: "smt16",
			req: Request{CPUs: map[string]string{"prep": "4-15", "infer-0": "4"}}},
		is: ErrOverlap, want: []string{"infer-0", "prep", `"4"`}, pe: PlanError{Field: FieldHost},
	}, {
		planCase: planCase{name: "more GPUs than cores, a CPU each asked for", host: "vm2", gpus: 4,
			req: Request{InferCPUs: 1}},
		is: ErrNoFit, want: []string{"infer-2 needs 1 CPU but no CPUs are left"},
		pe: PlanError{Field: FieldSize, Worker: "infer-2", Role: RoleInfer},
	}, {
		planCase: planCase{name: "more prep workers than cores", host: "smt16", allowed: "0-5",
			req: Request{Prep: 8}},
		is: ErrNoFit, want: []string{"prep-3", "a core"}, pe: PlanError{Field: FieldSize, Worker: "prep-3", Role: RolePrep},
	}, {
		planCase: planCase{name: "explicit cpus outside the allowed set", host: "smt16", allowed: "0-5",
			req: Request{CPUs: map[string]string{"prep-0": "8"}}},
		is: ErrNoFit, want: []string{"prep-0", `"8"`, `"0-5"`}, pe: PlanError{Field: FieldCPUs, Key: "prep-0"},
	}, {
		planCase: planCase{name: "reservation larger than the machine", host: "vm2",
			req: Request{Reserve: 3}},
		is: ErrNoFit, want: []string{"reserving 3 CPUs"}, pe: PlanError{Field: FieldReserve},
	}, {
		planCase: planCase{name: "infer count against GPU count", host: "numa2x32", gpus: 8,
			req: Request{Infer: 2}},
		want: []string{"2 requested", "8 GPUs"}, pe: PlanError{Field: FieldInfer},
	}, {
		planCase: planCase{name: "cpus for a worker the plan lacks", host: "vm2",
			req: Request{Prep: 1, CPUs: map[string]string{"prep-3": "1"}}},
		want: []string{"prep-3", "no such worker"}, pe: PlanError{Field: FieldCPUs, Key: "prep-3"},
	}, {
		planCase: planCase{name: "unknown key", host: "vm2",
			req: Request{CPUs: map[string]string{"preprocess": "1"}}},
		want: []string{`"preprocess"`}, pe: PlanError{Field: FieldCPUs, Key: "preprocess"},
	}, {
		planCase: planCase{name: "bad list", host: "vm2",
			req: Request{CPUs: map[string]string{"prep-0": "1-0"}}},
		is: ErrCPUList, want: []string{"prep-0", "1-0"}, pe: PlanError{Field: FieldCPUs, Key: "prep-0"},
	}, {
		planCase: planCase{name: "duplicate GPU", host: "vm2", req: Request{}},
		want:     []string{"GPU index 0 is listed twice"}, pe: PlanError{Field: FieldHost},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Placement
			var err error
			if tc.name == "duplicate GPU" {
				g := fakeGPUs(t, "vm2", 1)
				p, err = Plan(loadFake(t, "vm2", ""), append(g, g...), tc.req)
			} else {
				p, err = tc.plan(t)
			}
			if err == nil {
				t.Fatalf("Plan succeeded:\n%s", p)
			}
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("error %q is not a *PlanError", err)
			}
			if got := (PlanError{Field: pe.Field, Key: pe.Key, Worker: pe.Worker, Role: pe.Role}); got != tc.pe {
				t.Errorf("PlanError blames %+v, want %+v", got, tc.pe)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %q", err, tc.is)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
			t.Log(err)
		})
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	topo := loadFake(t, "numa2x32", "")
	gpus := fakeGPUs(t, "numa2x32", 8)
	first, err := Plan(topo, gpus, Request{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, _ := Plan(topo, gpus, Request{})
		if again.String() != first.String() {
			t.Fatalf("plan %d differs:\n%s\nfirst:\n%s", i, again, first)
		}
	}
}

func TestPlacementString(t *testing.T) {
	p, err := Plan(loadFake(t, "smt16", ""), fakeGPUs(t, "smt16", 1), Request{Prep: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Workers[1].Shared = true
	want := "" +
		"WORKER   DEVICE                                          NODE  CPUS\n" +
		"master   -                                               -     0,16\n" +
		"infer-0  GPU 0 GPU-00000000-0000-0000-0000-000000000000  0     1,17\n" +
		"prep-0   cpu                                             0     2,18 (shared)\n"
	if have := p.String(); have != want {
		t.Errorf("have:\n%s\nwant:\n%s", have, want)
	}
}

// TestPrintPlans logs the plan of every fake host; run with -v to see them.
func TestPrintPlans(t *testing.T) {
	for _, tc := range []struct {
		host, allowed string
		gpus          int
	}{{"vm2", "", 0}, {"vm2", "", 4}, {"smt16", "", 0}, {"smt16", "", 2}, {"smt16", "0-5", 0}, {"numa2x32", "", 8}} {
		p, err := Plan(loadFake(t, tc.host, tc.allowed), fakeGPUs(t, tc.host, tc.gpus), Request{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s allowed=%q gpus=%d:\n%s", tc.host, tc.allowed, tc.gpus, p)
	}
}

func TestPlanEmptyTopology(t *testing.T) {
	if _, err := Plan(&Topology{}, nil, Request{}); err == nil {
		t.Errorf("Plan on an empty topology succeeded")
	}
}
