package affinity

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/affinity/nvmltest"
)

func TestPCINUMANode(t *testing.T) {
	root := filepath.Join("testdata", "numa2x32")
	for _, tc := range []struct {
		bus  string
		want int
	}{
		{"0000:18:00.0", 0},
		{"00000000:9A:00.0", 1}, // NVML's form
		{"0000:ff:00.0", -1},    // no such device: unknown
	} {
		if have, err := PCINUMANode(root, tc.bus); err != nil || have != tc.want {
			t.Errorf("PCINUMANode(%q) = %d, %v; want %d", tc.bus, have, err, tc.want)
		}
	}
}

func TestSysfsBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0",
		"0000:3b:00.0":     "0000:3b:00.0",
		"00010000:01:00.0": "00010000:01:00.0", // a domain that needs its digits
	} {
		if have := sysfsBusID(in); have != want {
			t.Errorf("sysfsBusID(%q) = %q, want %q", in, have, want)
		}
	}
}

func TestStaticGPUsCopies(t *testing.T) {
	s := StaticGPUs{{Index: 0, UUID: "GPU-a"}}
	gpus, err := s.GPUs()
	if err != nil || len(gpus) != 1 {
		t.Fatalf("GPUs() = %v, %v", gpus, err)
	}
	gpus[0].UUID = "changed"
	if s[0].UUID != "GPU-a" {
		t.Errorf("GPUs() returned the config's own slice")
	}
}

// TestNVMLWithoutDriver proves a host without the NVIDIA driver has no
// GPUs and no error. On a GPU host it only checks that listing works.
func TestNVMLWithoutDriver(t *testing.T) {
	gpus, err := NVML{}.GPUs()
	if err != nil {
		t.Fatalf("NVML{}.GPUs() = %v", err)
	}
	if _, statErr := os.Stat("/dev/nvidiactl"); statErr != nil && len(gpus) != 0 {
		t.Errorf("no NVIDIA driver here (%v), yet NVML found %d GPUs", statErr, len(gpus))
	}
	t.Logf("NVML found %d GPUs", len(gpus))
	gpus, err = NVML{LibraryPath: "/nonexistent/libnvidia-ml.so.1"}.GPUs()
	if err != nil || len(gpus) != 0 {
		t.Errorf("NVML with a missing library = %v, %v; want no GPUs and no error", gpus, err)
	}
}

// TestNVMLFake: affinity.NVML reads each device's identity, memory and
// NUMA node (through its PCI bus in sysfs) and the driver's versions, as
// NVML reports them; twice, since every call opens and closes NVML.
func TestNVMLFake(t *testing.T) {
	n := NVML{LibraryPath: filepath.Join(nvmltest.Library(t, 2), nvmltest.LibraryName), SysRoot: filepath.Join("testdata", "numa2x32")}
	want := []GPU{
		{Index: 0, UUID: nvmltest.UUID(0), Name: "Fake GPU", PCIBusID: "0000:18:00.0", NUMANode: 0, MemoryBytes: 16 << 30},
		{Index: 1, UUID: nvmltest.UUID(1), Name: "Fake GPU", PCIBusID: "0000:9a:00.0", NUMANode: 1, MemoryBytes: 16 << 30},
	}
	for range 2 {
		gpus, err := n.GPUs()
		if err != nil || !reflect.DeepEqual(gpus, want) {
			t.Errorf("GPUs() = %+v, %v; want %+v", gpus, err, want)
		}
		d, err := n.Driver()
		if err != nil || d != (Driver{Version: nvmltest.Driver, CUDA: nvmltest.CUDA}) {
			t.Errorf("Driver() = %+v, %v; want %s, CUDA %s", d, err, nvmltest.Driver, nvmltest.CUDA)
		}
	}
}
