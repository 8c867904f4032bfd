package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/config/plan"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
	"github.com/supervisor-dev/supervisor/worker"
)

// fakeHost is a host from the sysfs trees under affinity/testdata (vm2: 2
// CPUs; smt16: 16 cores with SMT; numa2x32: 2 sockets of 32 cores with 8
// GPUs' PCI devices) with n fake GPUs, restricted to allowed ("" = all).
func fakeHost(t *testing.T, name, allowed string, n int) *plan.Host {
	t.Helper()
	root := filepath.Join("..", "affinity", "testdata", name)
	set, err := affinity.ParseCPUList(allowed)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := affinity.LoadTopology(root, set)
	if err != nil {
		t.Fatal(err)
	}
	buses := []string{"0000:18:00.0", "0000:2a:00.0", "0000:3b:00.0", "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"}
	var gpus affinity.StaticGPUs
	for i := range n {
		node, err := affinity.PCINUMANode(root, buses[i%len(buses)])
		if err != nil {
			t.Fatal(err)
		}
		gpus = append(gpus, affinity.GPU{Index: i, UUID: fmt.Sprintf("GPU-fake-%d", i), PCIBusID: buses[i%len(buses)], NUMANode: node})
	}
	list, _ := gpus.GPUs()
	return &plan.Host{Topology: topo, GPUs: list}
}

// placedWorkers renders a config's specs on a host, one line per worker.
func placedWorkers(t *testing.T, yaml string, h *plan.Host) []string {
	t.Helper()
	cfg := mustParseConfig(t, yaml, "t.yaml")
	m := New(cfg, zerolog.Nop(), Options{Host: h})
	if err := m.place(cfg); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, role := range []worker.Role{worker.RoleInfer, worker.RolePrep} {
		for _, s := range m.specs(cfg, role) {
			line := fmt.Sprintf("%s cpus %s", s.Name, s.CPUs)
			if s.Role == worker.RoleInfer {
				line += fmt.Sprintf(" %s %s threads %d", s.Provider, s.Device(), s.IntraOpThreads)
			}
			if s.MemoryPolicy != "" {
				line += fmt.Sprintf(" mem %s:%d", s.MemoryPolicy, s.NUMANode)
			}
			out = append(out, line)
		}
	}
	return out
}

func TestPlacedSpecs(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		host *plan.Host
		want []string
	}{
		{"2-CPU VM, default config", "", fakeHost(t, "vm2", "", 0),
			[]string{"infer-0 cpus 0 cpu cpu threads 1", "prep-0 cpus 1"}},
		{"2-CPU VM, explicit cpus", "infer:\n  cpus: 1\nprep:\n  cpus: 0\n", fakeHost(t, "vm2", "", 0),
			[]string{"infer-0 cpus 1 cpu cpu threads 1", "prep-0 cpus 0"}},
		{"2-CPU VM, more workers than CPUs, overcommit", "prep:\n  workers: 2\nplacement:\n  overcommit: true\n", fakeHost(t, "vm2", "", 0),
			[]string{"infer-0 cpus 0 cpu cpu threads 1", "prep-0 cpus 1", "prep-1 cpus 0-1"}},
		{"one GPU on the VM: CUDA, infer.workers unused", "infer:\n  workers: 3\n  intra_op_threads: 4\n", fakeHost(t, "vm2", "", 1),
			[]string{"infer-0 cpus 0 cuda gpu GPU-fake-0 threads 4", "prep-0 cpus 1"}},
		{"8 GPUs on 2 nodes, memory on the GPU's node", "prep:\n  workers: 2\nplacement:\n  numa_memory: preferred\n", fakeHost(t, "numa2x32", "", 8),
			[]string{
				"infer-0 cpus 1,65 cuda gpu GPU-fake-0 threads 2 mem preferred:0", "infer-1 cpus 2,66 cuda gpu GPU-fake-1 threads 2 mem preferred:0",
				"infer-2 cpus 3,67 cuda gpu GPU-fake-2 threads 2 mem preferred:0", "infer-3 cpus 4,68 cuda gpu GPU-fake-3 threads 2 mem preferred:0",
				"infer-4 cpus 32,96 cuda gpu GPU-fake-4 threads 2 mem preferred:1", "infer-5 cpus 33,97 cuda gpu GPU-fake-5 threads 2 mem preferred:1",
				"infer-6 cpus 34,98 cuda gpu GPU-fake-6 threads 2 mem preferred:1", "infer-7 cpus 35,99 cuda gpu GPU-fake-7 threads 2 mem preferred:1",
				"prep-0 cpus 5,69 mem preferred:0", "prep-1 cpus 36,100 mem preferred:1"}},
		{"GPUs chosen by index and UUID", "infer:\n  gpus: [5, GPU-fake-1]\nprep:\n  workers: 1\n", fakeHost(t, "numa2x32", "", 8),
			[]string{"infer-1 cpus 1,65 cuda gpu GPU-fake-1 threads 2", "infer-5 cpus 32,96 cuda gpu GPU-fake-5 threads 2", "prep-0 cpus 2,66"}},
		{"GPUs turned off on a GPU host", "infer:\n  gpus: []\n  workers: 2\n  cpus: 1-4\nprep:\n  cpus: 5-6\n", fakeHost(t, "smt16", "", 2),
			[]string{"infer-0 cpus 1-2 cpu cpu threads 2", "infer-1 cpus 3-4 cpu cpu threads 2", "prep-0 cpus 5", "prep-1 cpus 6"}},
		{"taskset 0-5 on 16 cores", "", fakeHost(t, "smt16", "0-5", 0),
			[]string{"infer-0 cpus 1-2 cpu cpu threads 2", "prep-0 cpus 3", "prep-1 cpus 4", "prep-2 cpus 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := placedWorkers(t, tt.yaml, tt.host); strings.Join(have, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("have:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestPlanErrors: a config that does not fit the host is refused with the
// line of the key to change, never placed with overlapping CPUs.
func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		host *plan.Host
		want string // prefix
		also string // substring
	}{
		{"more prep workers than cores", "listen: :1\nprep:\n  workers: 3\n", fakeHost(t, "vm2", "", 0),
			`t.yaml:3: prep.workers: request does not fit the CPUs: prep-1 needs a core but no CPUs are left`, "placement.overcommit: true"},
		{"prep share too big", "prep:\n  cpus_per_worker: 4\n  workers: 1\n", fakeHost(t, "smt16", "0-5", 0),
			`t.yaml:2: prep.cpus_per_worker: request does not fit the CPUs: prep-0 needs 4 CPUs but only CPUs "3-5" are left`, ""},
		{"more GPUs than cores, a core each asked for", "infer:\n  cpus_per_worker: 1\n", fakeHost(t, "vm2", "", 4),
			`t.yaml:2: infer.cpus_per_worker: request does not fit the CPUs: infer-2 needs 1 CPU`, ""},
		{"master CPUs outside the allowed set", "placement:\n  master_cpus: 7\n", fakeHost(t, "smt16", "0-5", 0),
			`t.yaml:2: placement.master_cpus: request does not fit the CPUs: cpus "7" for master include "7", which this process may not use (usable: "0-5")`, ""},
		{"pool outside the allowed set", "prep:\n  cpus: 4-9\n", fakeHost(t, "smt16", "0-5", 0),
			`t.yaml:2: prep.cpus: request does not fit`, `"6-9"`},
		{"GPU listed on a host without", "infer:\n  gpus: [0]\n", fakeHost(t, "vm2", "", 0),
			`t.yaml:2: infer.gpus[0]: GPU "0" is not on this host (NVML found no GPU: no NVIDIA driver, or no device)`, "use auto"},
		{"GPU the host lacks", "infer:\n  gpus:\n    - 1\n    - GPU-nope\n", fakeHost(t, "vm2", "", 2),
			`t.yaml:4: infer.gpus[1]: GPU "GPU-nope" is not on this host (found: 0 GPU-fake-0, 1 GPU-fake-1)`, ""},
		{"reservation on a small machine", "infer:\n  cpus: 0\nprep:\n  cpus: 1\nplacement:\n  master_cpus: 1\n", fakeHost(t, "vm2", "", 0),
			`t.yaml:4: prep.cpus: "1" overlaps placement.master_cpus "1"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.ParseConfig([]byte(tt.yaml), "t.yaml")
			if err == nil {
				var p *affinity.Placement
				if p, err = plan.Place(cfg, tt.host); err == nil {
					t.Fatalf("planned:\n%s", p)
				}
			}
			if !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.also) {
				t.Errorf("error:\n%s\nwant prefix:\n%s\nand %q", err, tt.want, tt.also)
			}
		})
	}
}

// TestFakeGPUWorkerEnvironment spawns an infer worker placed on a fake GPU
// of a 2-CPU host and checks what it sees: CUDA_VISIBLE_DEVICES naming its
// GPU, the CUDA provider in its spec, its cpuset as its CPU affinity and
// GOMAXPROCS.
func TestFakeGPUWorkerEnvironment(t *testing.T) {
	allowed, err := affinity.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if !allowed.Contains(0) || !allowed.Contains(1) {
		t.Skipf("needs CPUs 0 and 1 (the fake host's), this process may use %q", allowed)
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "all") // the master's own must not leak through
	cfg := mustParseConfig(t, "", "t.yaml")
	m := New(cfg, zerolog.Nop(), Options{Host: fakeHost(t, "vm2", "", 1)})
	if err := m.place(cfg); err != nil {
		t.Fatal(err)
	}
	t.Setenv(helperEnv, "describe")
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := m.specs(cfg, worker.RoleInfer)[0]
	spec.DrainTimeout = time.Second
	lc := workers.NewLifecycle(cfg, worker.RoleInfer, nil)
	hooks := workers.Hooks{Changed: func(*workers.Position) {}, Retire: func(*workers.Position, *workers.Process, time.Duration) {}}
	pos := workers.NewPosition(spec, lc, t.TempDir(), workers.Spawner{Exe: exe}, hooks, zerolog.Nop())
	booted := make(chan error, 1)
	pos.Start(booted)
	defer pos.StopAndWait()
	have := <-booted
	want := "CUDA_VISIBLE_DEVICES=GPU-fake-0 provider=cuda gpu=GPU-fake-0 affinity=0 gomaxprocs=1"
	if have == nil || !strings.HasSuffix(have.Error(), ": "+want) {
		t.Errorf("the worker reported %v, want %q", have, want)
	}
}

// describeWorker is the "describe" helper worker: it reports what it sees
// of its placement as its boot error.
func describeWorker(spec *worker.Spec) {
	rt := worker.Start(spec)
	cpus, _ := affinity.AllowedCPUs()
	rt.Fail(fmt.Errorf("CUDA_VISIBLE_DEVICES=%s provider=%s gpu=%s affinity=%s gomaxprocs=%d",
		os.Getenv("CUDA_VISIBLE_DEVICES"), spec.Provider, spec.GPU, cpus, runtime.GOMAXPROCS(0)))
}

// mustParseConfig parses a test's config, failing the test on an error.
func mustParseConfig(t *testing.T, data, source string) *config.Config {
	t.Helper()
	c, err := config.ParseConfig([]byte(data), source)
	if err != nil {
		t.Fatalf("ParseConfig(%s): %v", source, err)
	}
	return c
}
