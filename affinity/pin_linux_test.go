package affinity

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cpusAllowedList returns the Cpus_allowed_list line of a status file.
func cpusAllowedList(t *testing.T, status []byte) string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Cpus_allowed_list in %q", status)
	return ""
}

// threadMasks returns the Cpus_allowed_list of every thread of this process.
func threadMasks(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		t.Fatal(err)
	}
	masks := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		masks[p] = cpusAllowedList(t, b)
	}
	return masks
}

func TestStartPinned(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, cpu := range allowed.Slice()[:min(2, allowed.Count())] {
		want := NewCPUSet(cpu)
		var out bytes.Buffer
		cmd := exec.Command("/bin/cat", "/proc/self/status")
		cmd.Stdout = &out
		if err := StartPinned(cmd, want); err != nil {
			t.Fatalf("StartPinned(cat, %q): %v", want, err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if have := cpusAllowedList(t, out.Bytes()); have != want.String() {
			t.Errorf("child pinned to %q has Cpus_allowed_list %q", want, have)
		}
		for path, mask := range threadMasks(t) {
			if mask != allowed.String() {
				t.Errorf("after StartPinned, %s has Cpus_allowed_list %q, want the process's %q", path, mask, allowed)
			}
		}
	}
}

func TestStartPinnedEmptySet(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command("/bin/cat", "/proc/self/status")
	cmd.Stdout = &out
	if err := StartPinned(cmd, CPUSet{}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if have := cpusAllowedList(t, out.Bytes()); have != allowed.String() {
		t.Errorf("unpinned child has Cpus_allowed_list %q, want the parent's %q", have, allowed)
	}
}

func TestStartPinnedErrors(t *testing.T) {
	if err := StartPinned(exec.Command("/bin/true"), NewCPUSet(4000)); err == nil {
		t.Errorf("pinning to CPU 4000 succeeded")
	}
	cmd := exec.Command("/nonexistent/binary")
	if err := StartPinned(cmd, NewCPUSet(0)); err == nil {
		t.Errorf("starting a missing binary succeeded")
	}
	for path, mask := range threadMasks(t) {
		if allowed, _ := AllowedCPUs(); mask != allowed.String() {
			t.Errorf("after a failed start, %s has Cpus_allowed_list %q", path, mask)
		}
	}
}
