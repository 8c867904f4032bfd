package ort_test

import (
	"slices"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/ort"
)

// TestAvailableProviders: the library `make setup` fetches lists the CPU
// provider (the CPU build lists only that); a path that is not a library
// is an error naming it, not a crash.
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
	if _, err := ort.AvailableProviders(t.TempDir() + "/missing.so"); err == nil {
		t.Error("AvailableProviders of a missing file: no error")
	}
}
