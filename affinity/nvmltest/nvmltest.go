// Package nvmltest builds a fake NVML library for tests, so that code that
// asks NVML for GPUs (affinity.NVML, `supervisor gpus`, `supervisor check`,
// the scripts that call them) can be tested on a host without a GPU. The
// fake answers only the calls affinity.NVML makes, and reports the free
// memory and compute processes a test writes (WriteState); it is compiled from
// testdata/fakenvml.c with the C compiler cgo already needs.
package nvmltest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// StateEnv names the file the fake reads, at each call, for each device's
// free memory and compute processes; without it every device is idle (all
// its memory free, no process). WriteState writes it.
const StateEnv = "FAKE_NVML_STATE"

// Free and Process are lines of the state file: GPU i has bytes free, or
// runs process pid, which uses bytes of it.
func Free(i int, bytes uint64) string         { return fmt.Sprintf("%d free %d", i, bytes) }
func Process(i, pid int, bytes uint64) string { return fmt.Sprintf("%d pid %d %d", i, pid, bytes) }

// WriteState replaces the state file at path with lines (Free, Process).
// It writes a temporary file and renames it, so the fake never reads half
// of it.
func WriteState(tb testing.TB, path string, lines ...string) {
	tb.Helper()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path+".tmp", []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		tb.Fatal(err)
	}
}

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
