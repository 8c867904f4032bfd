package ort_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/ort"
)

// TestAvailableProviders: the library `make setup` fetches lists the CPU
// provider (the CPU build lists only that); a path that is not a library,
// a file that is not ELF, and a real library that is not ONNX Runtime
// (libc: no OrtGetApiBase) are errors naming it, not a crash.
func TestAvailableProviders(t *testing.T) {
	lib, err := ort.FindLibrary()
	if err != nil {
		t.Skip(err)
	}
	got, err := ort.AvailableProviders(lib)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, ort.ProviderCPU) {
		t.Errorf("AvailableProviders(%q) = %q; want it to list %s", lib, got, ort.ProviderCPU)
	}
	t.Logf("%s: %q", lib, got)
	notELF := filepath.Join(t.TempDir(), "libonnxruntime.so")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{t.TempDir() + "/missing.so", notELF, "libc.so.6"} {
		got, err := ort.AvailableProviders(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("AvailableProviders(%q) = %q, %v; want an error naming it", path, got, err)
		}
	}
}
