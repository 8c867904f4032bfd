package ort_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

func mlpInput(batch int, seed uint64) (tensor.Tensor, []float32) {
	r := rand.New(rand.NewPCG(seed, 3))
	x := make([]float32, batch*onnxmodel.MLPIn)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return tensor.Tensor{Name: "x", DType: tensor.FP32,
		Shape: []int64{int64(batch), onnxmodel.MLPIn}, Data: orttest.F32Bytes(x)}, x
}

func TestRunRejectsBadInputs(t *testing.T) {
	mlp := openModel(t, "mlp", onnxmodel.MLP(1))
	types := openModel(t, "types", onnxmodel.Types())
	good, _ := mlpInput(2, 1)
	with := func(f func(*tensor.Tensor)) []tensor.Tensor {
		in := good
		in.Shape = append([]int64(nil), good.Shape...)
		f(&in)
		return []tensor.Tensor{in}
	}
	mask := tensor.Tensor{Name: "mask", DType: tensor.Bool, Shape: []int64{1, 4}, Data: make([]byte, 4)}
	tests := []struct {
		name    string
		s       *ort.Session
		inputs  []tensor.Tensor
		outputs []string
		want    string // a fragment the error must contain
	}{
		{"unknown input", mlp, with(func(t *tensor.Tensor) { t.Name = "z" }), nil, `no input "z"`},
		{"wrong dtype", mlp, with(func(t *tensor.Tensor) { t.DType = tensor.FP64; t.Data = append(t.Data, t.Data...) }), nil, "datatype FP64"},
		{"wrong rank", mlp, with(func(t *tensor.Tensor) { t.Shape = []int64{32} }), nil, "does not match"},
		{"wrong static dim", mlp, with(func(t *tensor.Tensor) { t.Shape = []int64{4, 8} }), nil, "does not match"},
		{"short data", mlp, with(func(t *tensor.Tensor) { t.Data = t.Data[:len(t.Data)-1] }), nil, "needs 128 bytes"},
		{"negative dim", mlp, with(func(t *tensor.Tensor) { t.Shape = []int64{-2, 16} }), nil, "negative"},
		{"duplicate input", mlp, append(with(func(*tensor.Tensor) {}), good), nil, "twice"},
		{"no inputs", mlp, nil, nil, `needs input "x"`},
		{"missing input", types, []tensor.Tensor{mask}, nil, `needs input "ids"`},
		{"unknown output", mlp, []tensor.Tensor{good}, []string{"logits"}, `no output "logits"`},
		{"duplicate output", mlp, []tensor.Tensor{good}, []string{"y", "y"}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.s.Run(tt.inputs, tt.outputs)
			if err == nil {
				t.Fatalf("Run succeeded with %d outputs, want an error", len(out))
			}
			if !errors.Is(err, ort.ErrBadInput) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrBadInput containing %q", err, tt.want)
			}
		})
	}
	if _, err := mlp.Run([]tensor.Tensor{good}, nil); err != nil {
		t.Errorf("the good input failed after the bad ones: %v", err)
	}
}

func TestRunReturnsORTErrors(t *testing.T) {
	// Reshaping [batch,4] to [3] passes every check Run can make from the
	// metadata and fails inside ORT.
	m := onnxmodel.NewGraph("reshape").
		Input("x", tensor.FP32, onnxmodel.Sym("batch"), onnxmodel.D(4)).
		Int64s("shape", []int64{1}, []int64{3}).
		Node("Reshape", []string{"x", "shape"}, []string{"y"}).
		Output("y", tensor.FP32, onnxmodel.D(3)).Model()
	s := openModel(t, "reshape", m)
	_, err := s.Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{1, 4}, Data: make([]byte, 16)}}, nil)
	if err == nil || errors.Is(err, ort.ErrBadInput) || !strings.Contains(err.Error(), "ONNX Runtime failed") {
		t.Errorf("err = %v, want an ONNX Runtime error", err)
	}
}

func TestRunSelectsOutputs(t *testing.T) {
	s := openModel(t, "types", onnxmodel.Types())
	shape := []int64{1, 4}
	in := []tensor.Tensor{
		{Name: "ids", DType: tensor.Int64, Shape: shape, Data: orttest.I64Bytes([]int64{1, 2, 3, 4})},
		{Name: "mask", DType: tensor.Bool, Shape: shape, Data: orttest.BoolBytes([]bool{true, false, false, true})},
	}
	out, err := s.Run(in, []string{"inverted", "masked"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Name != "inverted" || out[1].Name != "masked" {
		t.Fatalf("got %+v, want inverted then masked", out)
	}
	if got, want := orttest.I64s(out[1].Data), []int64{1, 0, 0, 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("masked = %v, want %v", got, want)
	}
	if got, want := out[0].Data, []byte{0, 1, 1, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("inverted = %v, want %v", got, want)
	}
}

func TestRunCopiesMisalignedInput(t *testing.T) {
	s := openModel(t, "mlp", onnxmodel.MLP(1))
	in, x := mlpInput(3, 9)
	buf := make([]byte, len(in.Data)+1)
	copy(buf[1:], in.Data)
	shifted := in
	shifted.Data = buf[1:]
	want, err := s.Run([]tensor.Tensor{in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Run([]tensor.Tensor{shifted}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("misaligned input gave %v, aligned %v", got, want)
	}
	if !reflect.DeepEqual(orttest.F32s(shifted.Data), x) {
		t.Error("Run modified its input")
	}
}

func TestRunConcurrently(t *testing.T) {
	s := openModel(t, "mlp", onnxmodel.MLP(1))
	w := onnxmodel.NewMLPWeights(1)
	const goroutines, runs = 8, 25
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			errs <- func() error {
				for i := range runs {
					batch := 1 + (g+i)%4
					in, x := mlpInput(batch, uint64(g*runs+i))
					out, err := s.Run([]tensor.Tensor{in}, nil)
					if err != nil {
						return err
					}
					y := orttest.F32s(out[0].Data)
					for b := range batch {
						want := w.Forward(x[b*onnxmodel.MLPIn:])
						for k, v := range want {
							if d := y[b*onnxmodel.MLPOut+k] - v; d > 1e-4 || d < -1e-4 {
								return fmt.Errorf("goroutine %d run %d row %d: y[%d] = %v, want %v", g, i, b, k, y[b*onnxmodel.MLPOut+k], v)
							}
						}
					}
				}
				return nil
			}()
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestRunAfterClose(t *testing.T) {
	orttest.Init(t)
	b, err := onnxmodel.Fixed().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := orttest.Open(t, "fixed", b, ort.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	in := tensor.Tensor{Name: "x", DType: tensor.FP32, Shape: []int64{2, 3}, Data: make([]byte, 24)}
	if _, err := s.Run([]tensor.Tensor{in}, nil); !errors.Is(err, ort.ErrClosed) {
		t.Errorf("Run after Close: err = %v, want ErrClosed", err)
	}
}

func TestOpenErrors(t *testing.T) {
	orttest.Init(t)
	if _, err := ort.Open("/nonexistent/model.onnx", "missing", ort.Options{}); err == nil || !strings.Contains(err.Error(), "/nonexistent/model.onnx") {
		t.Errorf("Open of a missing file: err = %v, want one naming the path", err)
	}
}
