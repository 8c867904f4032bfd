// Package nvmltest builds a fake NVML library for tests, so that code that
// asks NVML for GPUs (affinity.NVML, `supervisor gpus`, `supervisor check`,
// the scripts that call them) can be tested on a host without a GPU. The
// fake answers only the calls affinity.NVML makes; it is compiled from
// testdata/fakenvml.c with the C compiler cgo already needs.
package nvmltest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed testdata/fakenvml.c
var source []byte

// LibraryName is the file the NVIDIA driver installs and go-nvml opens by
// default.
const LibraryName = "libnvidia-ml.so.1"

// Driver and CUDA are the versions the fake reports.
const (
	Driver = "550.54.15"
	CUDA   = "12.4"
)

// UUID is the fake's UUID for GPU i.
func UUID(i int) string { return fmt.Sprintf("GPU-fake-%d", i) }

// Library compiles the fake with gpus devices into a temporary directory
// and returns that directory, which holds LibraryName: pass the file to
// affinity.NVML.LibraryPath, or the directory in LD_LIBRARY_PATH to a
// binary. It skips the test when there is no C compiler.
func Library(tb testing.TB, gpus int) string {
	tb.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		tb.Skipf("no C compiler to build the fake NVML library: %v", err)
	}
	dir := tb.TempDir()
	src := filepath.Join(dir, "fakenvml.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-Wall", "-Werror", fmt.Sprintf("-DFAKE_GPUS=%d", gpus),
		"-o", filepath.Join(dir, LibraryName), src).CombinedOutput()
	if err != nil {
		tb.Fatalf("could not build the fake NVML library: %v\n%s", err, out)
	}
	return dir
}
