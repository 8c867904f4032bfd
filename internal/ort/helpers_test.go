package ort_test

import (
	"os"

	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
)

// openModel opens m on one intra-op thread for the length of the test.
func openModel(t testing.TB, name string, m *onnxmodel.Model) *ort.Session {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return orttest.Open(t, name, b, ort.Options{IntraOpThreads: 1})
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
