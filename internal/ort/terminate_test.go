package ort_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// slowInput is SlowSin's input: a scalar n.
func slowInput(n int64) []tensor.Tensor {
	return []tensor.Tensor{{Name: "n", DType: tensor.Int64, Shape: []int64{},
		Data: binary.LittleEndian.AppendUint64(nil, uint64(n))}}
}

// A run whose context ends is terminated by ONNX Runtime between nodes
// and fails with the context's cause; the session serves the next run.
// Outputs bound through an I/O binding (the path of output_binding:
// pinned, here on CPU memory) are terminated the same way.
func TestRunContextTerminatesLongRun(t *testing.T) {
	for _, outputs := range []ort.OutputBinding{ort.OutputsOff, ort.OutputsCPU} {
		t.Run(string(outputs), func(t *testing.T) {
			b, err := onnxmodel.SlowSin(400).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			s := orttest.Open(t, "slow", b, ort.Options{IntraOpThreads: 1, Outputs: outputs})
			checkTerminated(t, s)
		})
	}
}

// checkTerminated runs s (SlowSin) far past a 200ms context and checks
// the run stopped soon after with the context's cause, then serves again.
func checkTerminated(t *testing.T, s *ort.Session) {
	t.Helper()
	cause := errors.New("max_run_time passed")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 200*time.Millisecond, cause)
	defer cancel()
	start := time.Now()
	_, err := s.RunContext(ctx, slowInput(10_000_000), nil)
	took := time.Since(start)
	if !errors.Is(err, cause) {
		t.Fatalf("RunContext past its context's end: err %v, want one wrapping %v", err, cause)
	}
	t.Logf("terminated after %s", took)
	// Unstopped, the run takes many seconds (400 nodes of 1e7 sines).
	if took > 5*time.Second {
		t.Fatalf("RunContext returned %s after the context ended at 200ms: terminate did not stop it", took)
	}
	outs, err := s.RunContext(context.Background(), slowInput(3), nil)
	if err != nil {
		t.Fatalf("run after a terminated run: %v", err)
	}
	if len(outs) != 1 || len(outs[0].Data) != 4 {
		t.Fatalf("run after a terminated run: outputs %+v, want one FP32 [1]", outs)
	}
}

// A context that ends after the run returned changes nothing.
func TestRunContextUnendedRunSucceeds(t *testing.T) {
	s := openModel(t, "slow", onnxmodel.SlowSin(4))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.RunContext(ctx, slowInput(10), nil); err != nil {
		t.Fatalf("short run under a long bound: %v", err)
	}
}
