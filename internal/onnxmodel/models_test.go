package onnxmodel_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func marshal(t testing.TB, m *onnxmodel.Model) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func open(t testing.TB, name string, m *onnxmodel.Model) *ort.Session {
	t.Helper()
	return orttest.Open(t, name, marshal(t, m), ort.Options{IntraOpThreads: 1})
}

func TestMetadata(t *testing.T) {
	spec := func(name string, dt tensor.DType, shape ...int64) tensor.Spec {
		return tensor.Spec{Name: name, DType: dt, Shape: shape}
	}
	tests := []struct {
		name          string
		model         *onnxmodel.Model
		inputs, outpt []tensor.Spec
	}{
		{"default", onnxmodel.Default(1),
			[]tensor.Spec{spec("input", tensor.FP32, -1, 3, 224, 224)},
			[]tensor.Spec{spec("logits", tensor.FP32, -1, 1000)}},
		{"mlp", onnxmodel.MLP(1),
			[]tensor.Spec{spec("x", tensor.FP32, -1, 16)},
			[]tensor.Spec{spec("y", tensor.FP32, -1, 4)}},
		{"types", onnxmodel.Types(),
			[]tensor.Spec{spec("ids", tensor.Int64, -1, 4), spec("mask", tensor.Bool, -1, 4)},
			[]tensor.Spec{spec("masked", tensor.Int64, -1, 4), spec("inverted", tensor.Bool, -1, 4)}},
		{"fixed", onnxmodel.Fixed(),
			[]tensor.Spec{spec("x", tensor.FP32, 2, 3)},
			[]tensor.Spec{spec("y", tensor.FP32, 2, 3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tensor.Metadata{Name: tt.name, Platform: "onnxruntime_onnx", Inputs: tt.inputs, Outputs: tt.outpt}
			if got := open(t, tt.name, tt.model).Metadata(); !reflect.DeepEqual(got, want) {
				t.Errorf("metadata:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestMLPMatchesReference(t *testing.T) {
	s := open(t, "mlp", onnxmodel.MLP(7))
	w := onnxmodel.NewMLPWeights(7)
	r := rand.New(rand.NewPCG(1, 2))
	for _, batch := range []int{1, 3} {
		x := make([]float32, batch*onnxmodel.MLPIn)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32,
			Shape: []int64{int64(batch), onnxmodel.MLPIn}, Data: orttest.F32Bytes(x)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 || out[0].Name != "y" || !reflect.DeepEqual(out[0].Shape, []int64{int64(batch), onnxmodel.MLPOut}) {
			t.Fatalf("batch %d: got outputs %+v, want one y of shape [%d,%d]", batch, out, batch, onnxmodel.MLPOut)
		}
		got := orttest.F32s(out[0].Data)
		for b := 0; b < batch; b++ {
			want := w.Forward(x[b*onnxmodel.MLPIn : (b+1)*onnxmodel.MLPIn])
			for k, v := range want {
				if g := got[b*onnxmodel.MLPOut+k]; math.Abs(float64(g-v)) > 1e-4 {
					t.Errorf("batch %d row %d y[%d] = %v, want %v", batch, b, k, g, v)
				}
			}
		}
	}
}

func TestFixed(t *testing.T) {
	s := open(t, "fixed", onnxmodel.Fixed())
	x := []float32{0, 1, -1, 0.5, 100, -3.25}
	out, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{2, 3}, Data: orttest.F32Bytes(x)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = v*2 + 1
	}
	if got := orttest.F32s(out[0].Data); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(out[0].Shape, []int64{2, 3}) {
		t.Errorf("y = %v %v, want %v [2 3]", got, out[0].Shape, want)
	}
}

// TestSlowSinRows: y is n as floats, row by row, whatever the sines.
func TestSlowSinRows(t *testing.T) {
	s := open(t, "slow_sin_rows", onnxmodel.SlowSinRows(4))
	n := []int64{2, 1000, 7}
	out, err := s.Run([]tensor.Tensor{{Name: "n", DType: tensor.Int64, Shape: []int64{3, 1}, Data: orttest.I64Bytes(n)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := orttest.F32s(out[0].Data); !reflect.DeepEqual(got, []float32{2, 1000, 7}) || !reflect.DeepEqual(out[0].Shape, []int64{3, 1}) {
		t.Errorf("y = %v %v, want [2 1000 7] [3 1]", got, out[0].Shape)
	}
}

func TestTypes(t *testing.T) {
	s := open(t, "types", onnxmodel.Types())
	for _, batch := range []int{1, 3} {
		n := batch * 4
		ids, mask := make([]int64, n), make([]bool, n)
		wantMasked, wantInverted := make([]int64, n), make([]byte, n)
		for i := range ids {
			ids[i] = int64(i*1_000_000_007) - 5 // large and negative values too
			mask[i] = i%3 != 1
			if mask[i] {
				wantMasked[i] = ids[i]
			} else {
				wantInverted[i] = 1
			}
		}
		shape := []int64{int64(batch), 4}
		out, err := s.Run([]tensor.Tensor{
			{Name: "mask", DType: tensor.Bool, Shape: shape, Data: orttest.BoolBytes(mask)},
			{Name: "ids", DType: tensor.Int64, Shape: shape, Data: orttest.I64Bytes(ids)},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Name != "masked" || out[0].DType != tensor.Int64 || !reflect.DeepEqual(out[0].Shape, shape) {
			t.Errorf("batch %d: output 0 is %s %s %v, want masked INT64 %v", batch, out[0].Name, out[0].DType, out[0].Shape, shape)
		}
		if got := orttest.I64s(out[0].Data); !reflect.DeepEqual(got, wantMasked) {
			t.Errorf("batch %d: masked = %v, want %v", batch, got, wantMasked)
		}
		if out[1].Name != "inverted" || out[1].DType != tensor.Bool || !bytes.Equal(out[1].Data, wantInverted) {
			t.Errorf("batch %d: output 1 is %s %s %v, want inverted BOOL %v", batch, out[1].Name, out[1].DType, out[1].Data, wantInverted)
		}
	}
}

// defaultInput returns batch random images for the default model.
func defaultInput(seed uint64, batch int) []float32 {
	r := rand.New(rand.NewPCG(seed, 0))
	x := make([]float32, batch*3*224*224)
	for i := range x {
		x[i] = r.Float32()
	}
	return x
}

func runDefault(t *testing.T, s *ort.Session, x []float32) []float32 {
	t.Helper()
	batch := int64(len(x) / (3 * 224 * 224))
	out, err := s.Run([]tensor.Tensor{{Name: "input", DType: tensor.FP32,
		Shape: []int64{batch, 3, 224, 224}, Data: orttest.F32Bytes(x)}}, []string{"logits"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{batch, onnxmodel.DefaultClasses}; !reflect.DeepEqual(out[0].Shape, want) {
		t.Fatalf("logits shape %v, want %v", out[0].Shape, want)
	}
	return orttest.F32s(out[0].Data)
}

func TestDefaultBatchesAgree(t *testing.T) {
	s := open(t, "default", onnxmodel.Default(onnxmodel.DefaultSeed))
	pair := defaultInput(3, 2)
	both := runDefault(t, s, pair)
	nonzero := 0
	for i, v := range both {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d is %v", i, v)
		}
		if v != 0 {
			nonzero++
		}
	}
	if nonzero < len(both)/2 {
		t.Errorf("only %d of %d logits are non-zero", nonzero, len(both))
	}
	image := len(pair) / 2
	for row := 0; row < 2; row++ {
		single := runDefault(t, s, pair[row*image:(row+1)*image])
		for k, v := range single {
			if d := math.Abs(float64(v - both[row*onnxmodel.DefaultClasses+k])); d > 1e-4 {
				t.Fatalf("row %d logit %d: batch-1 %v, batch-2 %v", row, k, v, both[row*onnxmodel.DefaultClasses+k])
			}
		}
	}
	if reflect.DeepEqual(both[:onnxmodel.DefaultClasses], both[onnxmodel.DefaultClasses:]) {
		t.Error("two different images gave identical logits")
	}
}

func TestMarshalIsDeterministic(t *testing.T) {
	a, b := marshal(t, onnxmodel.Default(5)), marshal(t, onnxmodel.Default(5))
	if !bytes.Equal(a, b) {
		t.Error("Default(5) encoded twice gave different bytes")
	}
	if bytes.Equal(a, marshal(t, onnxmodel.Default(6))) {
		t.Error("Default(5) and Default(6) gave the same bytes")
	}
}

func TestWriteAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "models")
	if err := onnxmodel.WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"default.onnx", "fixed.onnx", "mlp.onnx", "types.onnx"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("WriteAll wrote %v, want %v", names, want)
	}
	for name, m := range onnxmodel.Files() {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, marshal(t, m)) {
			t.Errorf("%s on disk differs from its encoding", name)
		}
	}
}

func TestMarshalRejectsBadGraphs(t *testing.T) {
	bad := map[string]*onnxmodel.Model{
		"invalid input dtype": onnxmodel.NewGraph("g").Input("x", tensor.Invalid, onnxmodel.D(1)).Model(),
		"short initializer":   onnxmodel.NewGraph("g").Initializer("w", tensor.FP32, []int64{2}, []byte{1, 2, 3}).Model(),
		"node without op":     onnxmodel.NewGraph("g").Node("", []string{"x"}, []string{"y"}).Model(),
	}
	for name, m := range bad {
		if _, err := m.Marshal(); err == nil {
			t.Errorf("%s: Marshal succeeded, want an error", name)
		}
	}
}
