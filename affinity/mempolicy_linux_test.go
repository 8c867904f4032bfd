package affinity

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestStartPlacedMemPolicy checks that the child starts under the memory
// policy: /proc/self/numa_maps shows it on every mapping without one of
// its own ("prefer:0", "bind:0").
func TestStartPlacedMemPolicy(t *testing.T) {
	if _, err := os.Stat("/proc/self/numa_maps"); err != nil {
		t.Skipf("no NUMA support in this kernel: %v", err)
	}
	for mode, want := range map[MemMode]string{MemPreferred: "prefer:0", MemBind: "bind:0"} {
		var out bytes.Buffer
		cmd := exec.Command("/bin/cat", "/proc/self/numa_maps")
		cmd.Stdout = &out
		if err := StartPlaced(cmd, NewCPUSet(0), MemPolicy{Mode: mode, Node: 0}); err != nil {
			t.Fatalf("StartPlaced(%s): %v", mode, err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), " "+want+" ") {
			t.Errorf("child started with %s on node 0: numa_maps has no %q:\n%s", mode, want, out.String())
		}
	}
	// This process keeps the default policy.
	self, err := os.ReadFile("/proc/self/numa_maps")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(self), "prefer:") || strings.Contains(string(self), "bind:") {
		t.Errorf("the parent's memory policy changed:\n%s", self)
	}
}

func TestStartPlacedMemPolicyErrors(t *testing.T) {
	for _, mem := range []MemPolicy{{Mode: "interleave", Node: 0}, {Mode: MemBind, Node: -1}, {Mode: MemBind, Node: 5000}} {
		if err := StartPlaced(exec.Command("/bin/true"), CPUSet{}, mem); err == nil {
			t.Errorf("StartPlaced with %+v succeeded", mem)
		}
	}
}
