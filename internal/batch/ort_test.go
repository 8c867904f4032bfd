package batch_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// openMLP opens the MLP model on one intra-op thread.
func openMLP(tb testing.TB) *ort.Session { return openModel(tb, "mlp", onnxmodel.MLP(1)) }

// openModel opens m on one intra-op thread.
func openModel(tb testing.TB, name string, m *onnxmodel.Model) *ort.Session {
	tb.Helper()
	b, err := m.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return orttest.Open(tb, name, b, ort.Options{IntraOpThreads: 1})
}

// runAll binds a session to a RunFunc returning every output.
func runAll(s *ort.Session) batch.RunFunc {
	return func(ctx context.Context, in []tensor.Tensor) ([]tensor.Tensor, error) {
		return s.RunContext(ctx, in, nil)
	}
}

// warmBatcher8 batches s in batches of up to 8 rows, with a delay too
// long to matter (only full batches form), warmed up, closed at the end
// of the test.
func warmBatcher8(t *testing.T, s *ort.Session) *batch.Batcher {
	t.Helper()
	b, err := batch.New(batch.Config{MaxBatchSize: 8, MaxQueueDelay: time.Hour}, s.Metadata(), runAll(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.WarmUp(); err != nil {
		t.Fatal(err)
	}
	return b
}

func mlpRow(r *rand.Rand) tensor.Tensor {
	x := make([]float32, onnxmodel.MLPIn)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return tensor.Tensor{Name: "x", DType: tensor.FP32, Shape: []int64{1, onnxmodel.MLPIn}, Data: orttest.F32Bytes(x)}
}

// TestBatchedMatchesUnbatchedWithORT sends 16 concurrent rows through the
// MLP in batches of 8 (the delay is too long to matter, so only full
// batches form) and checks each answer bit for bit against running its row
// alone.
func TestBatchedMatchesUnbatchedWithORT(t *testing.T) {
	s := openMLP(t)
	b := warmBatcher8(t, s)
	r := rand.New(rand.NewPCG(7, 7))
	rows := make([]tensor.Tensor, 16)
	want := make([][]byte, len(rows))
	for i := range rows {
		rows[i] = mlpRow(r)
		out, err := s.Run([]tensor.Tensor{rows[i]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = out[0].Data
	}
	type answer struct {
		i   int
		out []tensor.Tensor
		err error
	}
	answers := make(chan answer, len(rows))
	for i, x := range rows {
		go func() {
			out, err := b.Submit(context.Background(), batch.Request{Inputs: []tensor.Tensor{x}})
			answers <- answer{i, out, err}
		}()
	}
	for range rows {
		var a answer
		select {
		case a = <-answers:
		case <-time.After(30 * time.Second):
			t.Fatal("a request never finished")
		}
		if a.err != nil {
			t.Fatalf("row %d: %v", a.i, a.err)
		}
		if y := a.out[0]; tensor.FormatShape(y.Shape) != "[1,4]" || !bytes.Equal(y.Data, want[a.i]) {
			t.Errorf("row %d: batched y %v %v, unbatched %v", a.i, y.Shape, orttest.F32s(y.Data), orttest.F32s(want[a.i]))
		}
	}
	st := b.Stats()
	if len(st.BatchStats) != 1 || st.BatchStats[0].BatchSize != 8 || st.BatchStats[0].ComputeInfer.Count != 2 {
		t.Errorf("batch stats %+v, want two batches of 8", st.BatchStats)
	}
}

// TestBatchesStringsWithORT batches requests of 1, 3 and 4 rows of the
// string identity model into one run of 8 rows (the delay is too long to
// matter): BYTES rows of different lengths are concatenated and split
// back, each request getting exactly its own strings.
func TestBatchesStringsWithORT(t *testing.T) {
	s := openModel(t, "strings", onnxmodel.Strings())
	b := warmBatcher8(t, s)
	type answer struct {
		in, out []byte
		err     error
	}
	answers := make(chan answer, 3)
	for i, rows := range []int{1, 3, 4} {
		var data []byte
		for k := range 2 * rows {
			data = tensor.AppendBytesElement(data, bytes.Repeat([]byte{byte('a' + i)}, k+i))
		}
		x := tensor.Tensor{Name: "text", DType: tensor.Bytes, Shape: []int64{int64(rows), 2}, Data: data}
		go func() {
			out, err := b.Submit(context.Background(), batch.Request{Inputs: []tensor.Tensor{x}})
			if err == nil {
				answers <- answer{data, out[0].Data, nil}
				return
			}
			answers <- answer{data, nil, err}
		}()
	}
	for range 3 {
		select {
		case a := <-answers:
			if a.err != nil || !bytes.Equal(a.out, a.in) {
				t.Errorf("answer %q, err %v, want its input %q back", a.out, a.err, a.in)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a request never finished")
		}
	}
	if st := b.Stats(); len(st.BatchStats) != 1 || st.BatchStats[0].BatchSize != 8 {
		t.Errorf("batch stats %+v, want one batch of 8", st.BatchStats)
	}
}

// TestStringWithNULFailsAlone sends two good 4-row string requests and a
// third whose element holds a NUL byte, which ONNX Runtime refuses. The
// NUL request must fail on its own with ErrBadRequest and the two good
// ones form the batch of 8 and get their strings back; checked only at
// run time, the NUL request would fail the batch it completed, or wait in
// the queue for an hour.
func TestStringWithNULFailsAlone(t *testing.T) {
	s := openModel(t, "strings", onnxmodel.Strings())
	b, err := batch.New(batch.Config{MaxBatchSize: 8, MaxQueueDelay: time.Hour, CheckInput: ort.CheckInput}, s.Metadata(), runAll(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	type answer struct {
		i   int
		out []tensor.Tensor
		err error
	}
	answers := make(chan answer, 3)
	inputs := make([][]byte, 3)
	for i := range inputs {
		for k := range 8 {
			elem := []byte{byte('a' + i), byte('0' + k)}
			if i == 1 && k == 5 {
				elem = []byte("x\x00y")
			}
			inputs[i] = tensor.AppendBytesElement(inputs[i], elem)
		}
		x := tensor.Tensor{Name: "text", DType: tensor.Bytes, Shape: []int64{4, 2}, Data: inputs[i]}
		go func() {
			out, err := b.Submit(context.Background(), batch.Request{Inputs: []tensor.Tensor{x}})
			answers <- answer{i, out, err}
		}()
	}
	for range 3 {
		select {
		case a := <-answers:
			switch {
			case a.i == 1 && !errors.Is(a.err, batch.ErrBadRequest):
				t.Errorf("NUL request: err %v, want ErrBadRequest", a.err)
			case a.i != 1 && (a.err != nil || !bytes.Equal(a.out[0].Data, inputs[a.i])):
				t.Errorf("good request %d: outputs %+v, err %v, want its input back", a.i, a.out, a.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a request never finished: the NUL request was queued, not refused")
		}
	}
}
