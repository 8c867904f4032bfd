package ort_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// openBound opens m twice: as usual, and with its outputs bound to the CPU
// allocator through the path pinned outputs take.
func openBound(t *testing.T, name string, m *onnxmodel.Model) (plain, bound *ort.Session) {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	plain = orttest.Open(t, name, b, ort.Options{IntraOpThreads: 1})
	bound = orttest.Open(t, name, b, ort.Options{IntraOpThreads: 1, Outputs: ort.OutputsCPU})
	return plain, bound
}

// mlpBatch is rows random rows for the MLP.
func mlpBatch(rows int) []tensor.Tensor {
	in, _ := mlpInput(rows, uint64(rows))
	return []tensor.Tensor{in}
}

// TestBoundOutputsMatch: every output read back from bound memory has the
// shape, datatype and bytes of the usual path's, for dynamic batch sizes
// (0 rows included), several dtypes, scalars and a model without inputs.
func TestBoundOutputsMatch(t *testing.T) {
	types := func(rows int) []tensor.Tensor {
		return []tensor.Tensor{
			{Name: "ids", DType: tensor.Int64, Shape: []int64{int64(rows), 4}, Data: make([]byte, rows*32)},
			{Name: "mask", DType: tensor.Bool, Shape: []int64{int64(rows), 4}, Data: make([]byte, rows*4)},
		}
	}
	scalar := []tensor.Tensor{
		{Name: "x", DType: tensor.FP32, Shape: []int64{}, Data: orttest.F32Bytes([]float32{2.5})},
		{Name: "n", DType: tensor.Int64, Shape: []int64{}, Data: make([]byte, 8)},
	}
	cases := []struct {
		name   string
		model  *onnxmodel.Model
		inputs [][]tensor.Tensor
	}{
		{"mlp", onnxmodel.MLP(1), [][]tensor.Tensor{mlpBatch(1), mlpBatch(3), mlpBatch(8), mlpBatch(0)}},
		{"types", onnxmodel.Types(), [][]tensor.Tensor{types(1), types(5)}},
		{"fp16", halfModel(onnxmodel.Sym("batch")), [][]tensor.Tensor{{{Name: "x", DType: tensor.FP16, Shape: []int64{2, 4}, Data: halves(fp16Values)}}}},
		{"scalar", onnxmodel.Scalar(), [][]tensor.Tensor{scalar}},
		{"constant", onnxmodel.Constant(), [][]tensor.Tensor{nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain, bound := openBound(t, c.name, c.model)
			for _, in := range c.inputs {
				want, err := plain.Run(in, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := bound.Run(in, nil)
				if err != nil {
					t.Fatalf("bound run: %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("bound outputs differ:\n got %+v\nwant %+v", got, want)
				}
			}
		})
	}
}

// TestCPUBuildCannotAllocatePinned: the CPU build of ONNX Runtime has no
// CudaPinned allocator, yet accepts outputs bound to it and allocates them
// from its CPU allocator; Run notices and fails, naming the output.
func TestCPUBuildCannotAllocatePinned(t *testing.T) {
	_, bound := openBound(t, "mlp", onnxmodel.MLP(1))
	if err := ort.BindOutputsTo(bound, "CudaPinned"); err != nil {
		t.Fatalf("BindOutputsTo: %v", err)
	}
	out, err := bound.Run(mlpBatch(2), nil)
	if !errors.Is(err, ort.ErrOutputBinding) {
		t.Fatalf("Run = %v, %v; want an error matching ErrOutputBinding", out, err)
	}
	want := `model "mlp": output binding not possible: output "y": ONNX Runtime put it in "Cpu" memory, not the "CudaPinned" it was bound to`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run: %v\nwant it to start with %s", err, want)
	}
}

// TestOpenRefusesPinned: pinned outputs need a CUDA session; without one,
// or with the CPU build that cannot start CUDA, Open fails with a typed
// error and the session never exists.
func TestOpenRefusesPinned(t *testing.T) {
	b, err := onnxmodel.MLP(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	orttest.Init(t)
	path := orttest.WriteModel(t, "mlp", b)
	_, err = ort.Open(path, "mlp", ort.Options{Outputs: ort.OutputsPinned})
	if !errors.Is(err, ort.ErrPinnedNeedsGPU) || !errors.Is(err, ort.ErrOutputBinding) || !strings.Contains(err.Error(), `model "mlp"`) {
		t.Errorf("Open without CUDA: %v, want ErrPinnedNeedsGPU naming model \"mlp\"", err)
	}
	if _, err := ort.Open(path, "mlp", ort.Options{Outputs: "mapped"}); !errors.Is(err, ort.ErrOutputBinding) || !strings.Contains(err.Error(), `"mapped"`) {
		t.Errorf("Open with an unknown binding: %v, want ErrOutputBinding naming it", err)
	}
	if ort.TryProvider(ort.ProviderCUDA) == nil {
		t.Skip("this ONNX Runtime can start CUDA: the CPU build's refusal is not testable here")
	}
	if _, err := ort.Open(path, "mlp", ort.Options{CUDA: true, Outputs: ort.OutputsPinned}); !errors.Is(err, ort.ErrNoCUDA) {
		t.Errorf("Open with CUDA on the CPU build: %v, want ErrNoCUDA", err)
	}
}

// TestBoundRefusesStrings: STRING outputs cannot live in an allocator's
// raw memory.
func TestBoundRefusesStrings(t *testing.T) {
	b, err := onnxmodel.Strings().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	orttest.Init(t)
	_, err = ort.Open(orttest.WriteModel(t, "strings", b), "strings", ort.Options{Outputs: ort.OutputsCPU})
	if !errors.Is(err, ort.ErrOutputBinding) || !strings.Contains(err.Error(), `output "same" is STRING`) {
		t.Errorf("Open: %v, want ErrOutputBinding naming output \"same\"", err)
	}
}

// TestBoundSizesOutputsAfterTheRun: bound outputs are allocated by ORT
// once it knows their shape, so an FP16 output whose dimension no input
// names, which the usual path must refuse (outshape.go), is served.
func TestBoundSizesOutputsAfterTheRun(t *testing.T) {
	m := onnxmodel.NewGraph("unsizable").
		Input("x", tensor.FP16, onnxmodel.Sym("batch"), onnxmodel.D(4)).
		Node("Add", []string{"x", "x"}, []string{"y"}).
		Output("y", tensor.FP16, onnxmodel.Sym("n"), onnxmodel.D(4)).Model()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := orttest.Open(t, "unsizable", b, ort.Options{Outputs: ort.OutputsCPU})
	out, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP16, Shape: []int64{2, 4}, Data: halves(fp16Values)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	doubled := make([]uint16, len(fp16Values))
	for i, h := range fp16Values {
		doubled[i] = h + 0x0400
	}
	if !reflect.DeepEqual(out[0].Shape, []int64{2, 4}) || !bytes.Equal(out[0].Data, halves(doubled)) {
		t.Errorf("y = %v % x, want [2 4] % x", out[0].Shape, out[0].Data, halves(doubled))
	}
}

// TestBoundOutputsBelongToTheCaller: what Run returns is Go memory of its
// own, untouched by later runs and by closing the session, which releases
// ORT's buffers.
func TestBoundOutputsBelongToTheCaller(t *testing.T) {
	plain, bound := openBound(t, "mlp", onnxmodel.MLP(1))
	first, err := bound.Run(mlpBatch(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := bytes.Clone(first[0].Data)
	for rows := 1; rows <= 8; rows++ {
		if _, err := bound.Run(mlpBatch(rows*3), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := bound.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first[0].Data, kept) {
		t.Errorf("later runs and Close changed an earlier run's output")
	}
	want, err := plain.Run(mlpBatch(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first[0].Data, want[0].Data) {
		t.Errorf("bound output % x, usual path % x", first[0].Data[:8], want[0].Data[:8])
	}
}
