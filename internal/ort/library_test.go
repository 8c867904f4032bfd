package ort_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
)

func TestFindLibraryFromEnvironment(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ORT_LIBRARY", lib)
	if got, err := ort.FindLibrary(); err != nil || got != lib {
		t.Errorf("FindLibrary() = %q, %v; want %q", got, err, lib)
	}
	t.Setenv("ORT_LIBRARY", lib+".missing")
	if _, err := ort.FindLibrary(); err == nil || !strings.Contains(err.Error(), "ORT_LIBRARY") {
		t.Errorf("FindLibrary() with a missing ORT_LIBRARY: err = %v, want one naming ORT_LIBRARY", err)
	}
}

func TestFindLibraryWalksUpToRepository(t *testing.T) {
	t.Setenv("ORT_LIBRARY", "")
	got, err := ort.FindLibrary()
	if err != nil {
		t.Skipf("no library in the repository (run `make setup`): %v", err)
	}
	if !strings.HasSuffix(got, "third_party/onnxruntime/libonnxruntime.so.1") {
		t.Errorf("FindLibrary() = %q, want the repository's third_party copy", got)
	}
}

func TestInitOnce(t *testing.T) {
	orttest.Init(t)
	lib, err := ort.FindLibrary()
	if err != nil {
		t.Fatal(err)
	}
	if err := ort.Init(lib); err != nil {
		t.Errorf("second Init with the same path: %v", err)
	}
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := ort.Init(other); err == nil || !strings.Contains(err.Error(), "already initialised") {
		t.Errorf("Init with another path: err = %v, want already initialised", err)
	}
}
