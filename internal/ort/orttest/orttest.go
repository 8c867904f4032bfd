// Package orttest helps tests and benchmarks that need ONNX Runtime: it
// initialises ORT from the repository's library (or skips when there is
// none), opens models from their bytes, and converts between Go slices and
// tensor.Tensor's raw little-endian Data.
package orttest

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/ort"
)

// Init initialises ORT with the library FindLibrary finds, and skips the
// test when there is none.
func Init(tb testing.TB) {
	tb.Helper()
	lib, err := ort.FindLibrary()
	if err != nil {
		tb.Skipf("ONNX Runtime is not installed, run `make setup` (or set ORT_LIBRARY): %v", err)
	}
	if err := ort.Init(lib); err != nil {
		tb.Fatal(err)
	}
}

// WriteModel writes model into a temporary file, name.onnx, and returns
// its path.
func WriteModel(tb testing.TB, name string, model []byte) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name+".onnx")
	if err := os.WriteFile(path, model, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Open initialises ORT, writes model into a temporary file and opens it as
// name. The session is closed when the test ends.
func Open(tb testing.TB, name string, model []byte, opts ort.Options) *ort.Session {
	tb.Helper()
	Init(tb)
	path := WriteModel(tb, name, model)
	s, err := ort.Open(path, name, opts)
	if err != nil {
		tb.Fatalf("open model %q: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// F32Bytes encodes v as FP32 tensor data.
func F32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// F32s decodes FP32 tensor data.
func F32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// I64Bytes encodes v as INT64 tensor data.
func I64Bytes(v []int64) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, n := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	}
	return b
}

// I64s decodes INT64 tensor data.
func I64s(b []byte) []int64 {
	v := make([]int64, len(b)/8)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

// BoolBytes encodes v as BOOL tensor data, one byte 0 or 1 per element.
func BoolBytes(v []bool) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		if x {
			b[i] = 1
		}
	}
	return b
}
