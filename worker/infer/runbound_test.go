package infer

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/worker"
)

// wedgedCalls records the calls of a runBound's wedged hook.
type wedgedCalls chan string

func (w wedgedCalls) hook(model string, _ time.Duration) { w <- model }

// A run that stops when its context ends fails with the bound's
// *RunTimeoutError, and the worker is not declared wedged.
func TestRunBoundStopsARunAtItsBound(t *testing.T) {
	calls := make(wedgedCalls, 1)
	b := &runBound{model: "m", max: 20 * time.Millisecond, grace: 50 * time.Millisecond, wedged: calls.hook}
	_, err := b.run(context.Background(), func(ctx context.Context) ([]tensor.Tensor, error) {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(10 * time.Second):
			return nil, errors.New("the run's context did not end at max_run_time")
		}
	})
	var rte *RunTimeoutError
	if !errors.As(err, &rte) || rte.Model != "m" || rte.MaxRunTime != 20*time.Millisecond {
		t.Fatalf("run past its bound: err %v, want a *RunTimeoutError for model m and 20ms", err)
	}
	// The watchdog was stopped when the run returned: wait past when it
	// would have fired.
	select {
	case m := <-calls:
		t.Fatalf("wedged(%q) called for a run that stopped at its bound", m)
	case <-time.After(150 * time.Millisecond):
	}
}

// A run that ignores terminate is declared wedged grace after its bound;
// when it does return, it fails with the bound's error.
func TestRunBoundDeclaresAWedgedRun(t *testing.T) {
	calls := make(wedgedCalls, 1)
	b := &runBound{model: "m", max: 20 * time.Millisecond, grace: 30 * time.Millisecond, wedged: calls.hook}
	release := make(chan struct{})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := b.run(context.Background(), func(context.Context) ([]tensor.Tensor, error) {
			<-release // a node that never checks the terminate flag
			return nil, errors.New("ONNX Runtime: terminated")
		})
		done <- err
	}()
	select {
	case m := <-calls:
		if m != "m" || time.Since(start) < 50*time.Millisecond {
			t.Errorf("wedged(%q) after %s, want model m after max+grace (50ms)", m, time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a run that ignored terminate was not declared wedged within 10s")
	}
	close(release)
	var rte *RunTimeoutError
	if err := <-done; !errors.As(err, &rte) {
		t.Errorf("the wedged run, once it returned: err %v, want a *RunTimeoutError", err)
	}
}

// A run within its bound keeps its result; 0 is no bound.
func TestRunBoundPassesQuickRuns(t *testing.T) {
	out := []tensor.Tensor{{Name: "y"}}
	for _, max := range []time.Duration{0, time.Minute} {
		b := &runBound{model: "m", max: max, grace: time.Second, wedged: func(string, time.Duration) { t.Error("wedged called") }}
		got, err := b.run(context.Background(), func(ctx context.Context) ([]tensor.Tensor, error) {
			if (max == 0) != (ctx.Done() == nil) {
				t.Errorf("bound %s: the run's context ends: %v", max, ctx.Done() != nil)
			}
			return out, nil
		})
		if err != nil || len(got) != 1 || got[0].Name != "y" {
			t.Errorf("bound %s: %v %v, want the run's output", max, got, err)
		}
	}
	if graceFor(time.Millisecond) != graceMin || graceFor(time.Hour) != graceMax || graceFor(5*time.Second) != 5*time.Second {
		t.Errorf("graceFor: 1ms→%s 1h→%s 5s→%s, want %s %s 5s", graceFor(time.Millisecond), graceFor(time.Hour),
			graceFor(5*time.Second), graceMin, graceMax)
	}
}

// On ONNX Runtime: a run in one MatMul node of seconds cannot be
// terminated (ORT checks between nodes), so the model's batcher declares
// it wedged graceMin after max_run_time (the worker would exit there), and
// when the node ends the batch fails with the bound's error.
func TestRunBoundWedgedInOneORTNode(t *testing.T) {
	orttest.Init(t)
	b, err := onnxmodel.SquareMatMul().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	calls := make(wedgedCalls, 1)
	m := worker.Model{Name: "mm", Path: orttest.WriteModel(t, "mm", b), Warmup: worker.WarmupNone, MaxRunTime: 500 * time.Millisecond}
	mod, err := openModel(m, ort.Options{IntraOpThreads: 1}, nil, &runs{}, calls.hook)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.close()
	n := tensor.Tensor{Name: "n", DType: tensor.Int64, Shape: []int64{}, Data: binary.LittleEndian.AppendUint64(nil, 5000)}
	start := time.Now()
	_, err = mod.submit(batch.Request{Inputs: []tensor.Tensor{n}})
	took := time.Since(start)
	var rte *RunTimeoutError
	if !errors.As(err, &rte) {
		t.Fatalf("a run of %s past max_run_time 500ms: err %v, want a *RunTimeoutError", took, err)
	}
	select {
	case got := <-calls:
		if got != "mm" {
			t.Errorf("wedged(%q), want mm", got)
		}
	default:
		t.Skipf("the 5000×5000 MatMul took only %s here, under max_run_time + grace (%s): nothing was wedged", took, 500*time.Millisecond+graceMin)
	}
	t.Logf("the MatMul node returned after %s", took)
}
