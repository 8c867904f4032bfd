package infer

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// TestRefusedWarmupLeavesModelServing: a valid model whose zero warm-up
// ONNX Runtime refuses (Reshape to the shape [0,0] read from an input)
// opens, says why its warm-up failed, and answers a valid request; a
// warm-up file that is not a request for the model is still an error.
func TestRefusedWarmupLeavesModelServing(t *testing.T) {
	orttest.Init(t)
	b, err := onnxmodel.ReshapeByInput().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := orttest.WriteModel(t, "reshape", b)
	noWedge := func(string, time.Duration) { t.Error("a run was declared wedged") }
	mod, err := openModel(worker.Model{Name: "reshape", Path: path}, ort.Options{IntraOpThreads: 1}, nil, &runs{}, noWedge)
	if err != nil {
		t.Fatalf("a model whose zero warm-up is refused: %v, want it open", err)
	}
	defer mod.close()
	if !strings.Contains(mod.warmupFailed, "warm-up at batch size 1 failed") || !strings.Contains(mod.warmupFailed, "serves anyway") {
		t.Errorf("warmupFailed = %q, want the refused run and that the model serves", mod.warmupFailed)
	}
	x := tensor.Tensor{Name: "x", DType: tensor.FP32, Shape: []int64{4}}
	for _, v := range []float32{1, 2, 3, 4} {
		x.Data = binary.LittleEndian.AppendUint32(x.Data, math.Float32bits(v))
	}
	shape := tensor.Tensor{Name: "shape", DType: tensor.Int64, Shape: []int64{2},
		Data: binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 2), 2)}
	outs, err := mod.submit(batch.Request{Inputs: []tensor.Tensor{x, shape}})
	if err != nil || len(outs) != 1 || tensor.FormatShape(outs[0].Shape) != "[2,2]" {
		t.Fatalf("a valid request after the refused warm-up: %v %v, want y [2,2]", outs, err)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[3],"data":[1,2,3]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openModel(worker.Model{Name: "reshape", Path: path, Warmup: bad}, ort.Options{IntraOpThreads: 1}, nil, &runs{}, noWedge); err == nil ||
		!strings.Contains(err.Error(), "not a valid V2 request for the model") {
		t.Errorf("a warm-up file that is not a request for the model: %v, want the model refused saying so", err)
	}
}
