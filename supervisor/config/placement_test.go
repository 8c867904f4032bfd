package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestConfigPlacementValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want func(c *Config)
	}{
		{"explicit cpus", "prep:\n  cpus: 2-7\n  cpus_per_worker: 2\ninfer:\n  cpus: '1'\n  cpus_per_worker: 1\n",
			func(c *Config) {
				c.Prep.CPUs, c.Prep.CPUsPerWorker = "2-7", 2
				c.Infer.CPUs, c.Infer.CPUsPerWorker = "1", 1
			}},
		{"a CPU list written as a number", "placement:\n  master_cpus: 0\n", func(c *Config) { c.Placement.MasterCPUs = "0" }},
		{"gpus auto", "infer:\n  gpus: auto\n", func(c *Config) {}},
		{"no gpus", "infer:\n  gpus: []\n", func(c *Config) { c.Infer.GPUs = GPUSelection{Explicit: true} }},
		{"gpus by index and UUID", "infer:\n  gpus: [0, GPU-8f6e-11, MIG-aa]\n", func(c *Config) {
			c.Infer.GPUs = GPUSelection{Explicit: true, Devices: []string{"0", "GPU-8f6e-11", "MIG-aa"}}
		}},
		{"placement section", "placement:\n  master_cpus: none\n  numa_memory: bind\n  overcommit: true\n", func(c *Config) {
			c.Placement = PlacementConfig{MasterCPUs: "none", NUMAMemory: "bind", Overcommit: true}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := DefaultConfig()
			tt.want(want)
			if have := mustParseConfig(t, tt.yaml, "t.yaml"); !reflect.DeepEqual(plainConfig(have), plainConfig(want)) {
				t.Errorf("have %+v\nwant %+v", plainConfig(have), plainConfig(want))
			}
		})
	}
}

func TestConfigPlacementErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each a prefix of one message, in order
	}{
		{"bad list", "prep:\n  cpus: 3-1\n",
			[]string{`t.yaml:2: prep.cpus: "3-1" is not a CPU list: invalid CPU list "3-1": range "3-1" ends before it starts (use auto or a CPU list such as 2-7,10)`}},
		{"empty list", "infer:\n  cpus: ''\n", []string{`t.yaml:2: infer.cpus: is empty (use auto or a CPU list`}},
		{"none only for the master", "prep:\n  cpus: none\n", []string{`t.yaml:2: prep.cpus: "none" is not a CPU list`}},
		{"overlapping lists", "placement:\n  master_cpus: 0-1\ninfer:\n  cpus: 1-2\nprep:\n  cpus: 2-5\n",
			[]string{`t.yaml:4: infer.cpus: "1-2" overlaps placement.master_cpus "0-1" on CPUs "1" (give each its own CPUs)`,
				`t.yaml:6: prep.cpus: "2-5" overlaps infer.cpus "1-2" on CPUs "2"`}},
		{"negative share", "prep:\n  cpus_per_worker: -1\n", []string{`t.yaml:2: prep.cpus_per_worker: -1 is out of range`}},
		{"memory policy", "placement:\n  numa_memory: interleave\n",
			[]string{`t.yaml:2: placement.numa_memory: "interleave" is not a memory policy (use none, preferred or bind)`}},
		{"overcommit not a bool", "placement:\n  overcommit: yes please\n", []string{`t.yaml:2: placement.overcommit: "yes please" is not true or false`}},
		{"gpus scalar", "infer:\n  gpus: 0\n", []string{`t.yaml:2: infer.gpus: want auto, [] (no GPUs) or a list of GPU indexes or UUIDs such as [0, 1], got "0"`}},
		{"gpu not an id", "infer:\n  gpus: [0, gpu1, 0]\n",
			[]string{`t.yaml:2: infer.gpus[1]: "gpu1" is neither a GPU index`, `t.yaml:2: infer.gpus[2]: "0" is already infer.gpus[0]`}},
		{"unknown placement key", "placement:\n  pin: true\n",
			[]string{`t.yaml:2: unknown key "pin" in placement (known keys: master_cpus, numa_memory, overcommit)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}

func TestGPUSelectionYAML(t *testing.T) {
	c := DefaultConfig()
	for sel, want := range map[string]GPUSelection{
		"gpus: auto\n":               {},
		"gpus: []\n":                 {Explicit: true},
		"gpus: [0, 3]\n":             {Explicit: true, Devices: []string{"0", "3"}},
		"gpus: [GPU-1f2e, MIG-9a]\n": {Explicit: true, Devices: []string{"GPU-1f2e", "MIG-9a"}},
		"gpus: [2, GPU-00-11-22]\n":  {Explicit: true, Devices: []string{"2", "GPU-00-11-22"}},
		"gpus: [\"GPU-0\", \"1\"]\n": {Explicit: true, Devices: []string{"GPU-0", "1"}},
	} {
		c.Infer.GPUs = want
		out, err := c.YAML()
		if err != nil {
			t.Fatal(err)
		}
		if want.String() != "[GPU-0, 1]" && !strings.Contains(string(out), "  "+sel) {
			t.Errorf("YAML() of %s writes:\n%s", want, out)
		}
		back, err := ParseConfig(out, "out")
		if err != nil || !reflect.DeepEqual(back.Infer.GPUs, want) {
			t.Errorf("%s: round trip = %+v, %v", want, back.Infer.GPUs, err)
		}
	}
}
