package affinity

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/affinity/nvmltest"
)

// TestGPURoomFake: GPURoom compares a device's free memory with what a
// process uses on it, as the fake NVML reports them, finding the device
// by UUID or index; without the figures (no such pid, no NVML) it lets
// the replacement surge and says why.
func TestGPURoomFake(t *testing.T) {
	state := filepath.Join(t.TempDir(), "nvml-state")
	t.Setenv(nvmltest.StateEnv, state)
	r := GPURoom{NVML: NVML{LibraryPath: filepath.Join(nvmltest.Library(t, 2), nvmltest.LibraryName)}}
	const gib = 1 << 30
	nvmltest.WriteState(t, state,
		nvmltest.Free(0, 10*gib), nvmltest.Process(0, 4242, 12*gib), nvmltest.Process(0, 77, 2*gib),
		nvmltest.Free(1, 14*gib), nvmltest.Process(1, 4243, 2*gib))
	for _, c := range []struct {
		device string
		pid    int
		ok     bool
		why    string
	}{
		{nvmltest.UUID(0), 4242, false, "free 10.0 GiB, worker uses 12.0 GiB"},
		{"0", 4242, false, "free 10.0 GiB, worker uses 12.0 GiB"},
		{nvmltest.UUID(0), 77, true, ""},
		{nvmltest.UUID(1), 4243, true, ""},
		{nvmltest.UUID(1), 4242, true, "pid 4242 is not among NVML's processes on GPU GPU-fake-1"},
		{"GPU-other", 4242, true, "could not compare GPU memory: could not open NVML device GPU-other"},
	} {
		ok, why := r.Fits(c.device, c.pid)
		if ok != c.ok || !strings.HasPrefix(why, c.why) || (c.why == "") != (why == "") {
			t.Errorf("Fits(%s, %d) = %v, %q; want %v, %q", c.device, c.pid, ok, why, c.ok, c.why)
		}
	}
	ok, why := GPURoom{NVML: NVML{LibraryPath: "/nonexistent/libnvidia-ml.so.1"}}.Fits("0", 1)
	if !ok || why != "no NVML on this host to compare GPU memory" {
		t.Errorf("Fits without NVML = %v, %q; want true and why it could not compare", ok, why)
	}
}
