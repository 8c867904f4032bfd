package ort_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
)

// TestCUDAUnavailable: with the CPU build of ONNX Runtime (what `make
// setup` fetches), a session that asks for CUDA fails with ErrNoCUDA and
// a message that says what to do, instead of silently running on the CPU.
// With a GPU build on a GPU host the session opens.
func TestCUDAUnavailable(t *testing.T) {
	orttest.Init(t)
	b, err := onnxmodel.MLP(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mlp.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	restore := ort.KeepGoSignalHandlers()
	s, err := ort.Open(path, "mlp", ort.Options{IntraOpThreads: 1, CUDA: true})
	restore()
	if err == nil {
		s.Close()
		t.Skip("this ONNX Runtime library has a working CUDA provider")
	}
	if !errors.Is(err, ort.ErrNoCUDA) || !strings.Contains(err.Error(), "infer.gpus: []") {
		t.Errorf("Open with CUDA on a CPU-only library: %v; want ErrNoCUDA with a hint", err)
	}
	t.Log(err)
}
