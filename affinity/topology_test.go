package affinity

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustCPUs(t *testing.T, s string) CPUSet {
	t.Helper()
	set, err := ParseCPUList(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func loadFake(t *testing.T, name, allowed string) *Topology {
	t.Helper()
	topo, err := LoadTopology(filepath.Join("testdata", name), mustCPUs(t, allowed))
	if err != nil {
		t.Fatalf("LoadTopology(%s, %q): %v", name, allowed, err)
	}
	return topo
}

func TestLoadTopology(t *testing.T) {
	for _, tc := range []struct {
		host, allowed         string
		cpus                  string
		cores, packages       int
		nodes                 []string // each node's CPUs
		firstCore, secondCore string
	}{
		{"vm2", "", "0-1", 2, 1, []string{"0-1"}, "0", "1"},
		{"smt16", "", "0-31", 16, 1, []string{"0-31"}, "0,16", "1,17"},
		{"smt16", "0-5", "0-5", 6, 1, []string{"0-5"}, "0", "1"},
		{"smt16", "0-5,16", "0-5,16", 6, 1, []string{"0-5,16"}, "0,16", "1"},
		{"numa2x32", "", "0-127", 64, 2, []string{"0-31,64-95", "32-63,96-127"}, "0,64", "1,65"},
		{"numa2x32", "32-63", "32-63", 32, 1, []string{"32-63"}, "32", "33"},
	} {
		topo := loadFake(t, tc.host, tc.allowed)
		name := tc.host + " allowed " + tc.allowed
		if topo.CPUs.String() != tc.cpus || len(topo.Cores) != tc.cores || len(topo.Packages) != tc.packages {
			t.Errorf("%s: CPUs %q, %d cores, %d packages; want %q, %d, %d", name, topo.CPUs, len(topo.Cores), len(topo.Packages), tc.cpus, tc.cores, tc.packages)
		}
		var nodes []string
		for _, n := range topo.Nodes {
			nodes = append(nodes, n.CPUs.String())
		}
		if strings.Join(nodes, " ") != strings.Join(tc.nodes, " ") {
			t.Errorf("%s: nodes %q, want %q", name, nodes, tc.nodes)
		}
		if topo.Cores[0].CPUs.String() != tc.firstCore || topo.Cores[1].CPUs.String() != tc.secondCore {
			t.Errorf("%s: first cores %q %q, want %q %q", name, topo.Cores[0].CPUs, topo.Cores[1].CPUs, tc.firstCore, tc.secondCore)
		}
	}
}

func TestLoadTopologyCoreFields(t *testing.T) {
	topo := loadFake(t, "numa2x32", "")
	last := topo.Cores[len(topo.Cores)-1]
	if last.ID != 31 || last.Package != 1 || last.Node != 1 || last.CPUs.String() != "63,127" {
		t.Errorf("last core = %+v, want core 31 of package 1 on node 1 with CPUs 63,127", last)
	}
	if topo.NodeOf(100) != 1 || topo.NodeOf(200) != -1 {
		t.Errorf("NodeOf(100) = %d, NodeOf(200) = %d", topo.NodeOf(100), topo.NodeOf(200))
	}
}

func TestLoadTopologyErrors(t *testing.T) {
	if _, err := LoadTopology(filepath.Join("testdata", "smt16"), NewCPUSet(40)); err == nil || !strings.Contains(err.Error(), `"40"`) {
		t.Errorf("allowed set outside the online CPUs: err = %v", err)
	}
	if _, err := LoadTopology(filepath.Join("testdata", "missing"), CPUSet{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: err = %v, want fs.ErrNotExist", err)
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"devices/system/cpu/online":                       "0-1\n",
		"devices/system/cpu/cpu0/topology/core_id":        "zero\n",
		"devices/system/cpu/cpu0/topology/core_cpus_list": "0\n",
	})
	_, err := LoadTopology(root, CPUSet{})
	if err == nil || !strings.Contains(err.Error(), "core_id") {
		t.Errorf("bad core_id: err = %v, want one naming core_id", err)
	}
}

func TestLoadTopologyWithoutTopologyDir(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"devices/system/cpu/online": "0-2\n"})
	topo, err := LoadTopology(root, CPUSet{})
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Cores) != 3 || len(topo.Nodes) != 1 || topo.Nodes[0].ID != 0 {
		t.Errorf("have %d cores and nodes %+v; want 3 cores on node 0", len(topo.Cores), topo.Nodes)
	}
}

// TestLoadTopologyReal reads this machine's /sys with its own allowed set.
func TestLoadTopologyReal(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skip("no sysfs here:", err)
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := LoadTopology("", allowed)
	if err != nil {
		t.Fatal(err)
	}
	if !topo.CPUs.Equal(allowed.Intersect(topo.Online)) || len(topo.Cores) == 0 || len(topo.Nodes) == 0 {
		t.Errorf("topology of this machine: %+v (allowed %q)", topo, allowed)
	}
	var union CPUSet
	for _, c := range topo.Cores {
		if !union.Intersect(c.CPUs).IsEmpty() {
			t.Errorf("core %+v overlaps an earlier core", c)
		}
		union = union.Union(c.CPUs)
	}
	if !union.Equal(topo.CPUs) {
		t.Errorf("cores cover %q, want %q", union, topo.CPUs)
	}
	t.Logf("this machine: online %q, usable %q, %d cores, %d nodes", topo.Online, topo.CPUs, len(topo.Cores), len(topo.Nodes))
}
