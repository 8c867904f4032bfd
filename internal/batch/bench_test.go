package batch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
	"github.com/supervisor-dev/supervisor/internal/ort"
	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// benchClients is the number of concurrent single-row clients, the
// concurrency the "batching on ÷ off" target is set at.
const benchClients = 32

// The Batched/Unbatched pairs push single-row requests from benchClients
// goroutines through a Batcher with one instance per core, each on one
// intra-op thread; infer/s against each other is what batching buys.

var mlpBatched = batch.Config{MaxBatchSize: 32, MaxQueueDelay: time.Millisecond, Instances: 2}

func BenchmarkMLPBatched(b *testing.B) {
	benchmarkBatcher(b, openMLP(b), mlpBatched, mlpInput, 0)
}

func BenchmarkMLPUnbatched(b *testing.B) {
	benchmarkBatcher(b, openMLP(b), batch.Config{Instances: 2}, mlpInput, 0)
}

// BenchmarkMLPSuspects is BenchmarkMLPBatched with every 32nd request of
// each client, then every request, marked Alone, as the master marks a
// poison suspect's: what suspects cost the model's throughput.
func BenchmarkMLPSuspects(b *testing.B) {
	for _, every := range []int{32, 1} {
		b.Run(fmt.Sprintf("alone_every_%d", every), func(b *testing.B) {
			benchmarkBatcher(b, openMLP(b), mlpBatched, mlpInput, every)
		})
	}
}

func BenchmarkDefaultBatched(b *testing.B) {
	benchmarkBatcher(b, openDefault(b), batch.Config{MaxBatchSize: 8, MaxQueueDelay: 5 * time.Millisecond, Instances: 2}, imageInput, 0)
}

func BenchmarkDefaultUnbatched(b *testing.B) {
	benchmarkBatcher(b, openDefault(b), batch.Config{Instances: 2}, imageInput, 0)
}

func openDefault(b *testing.B) *ort.Session {
	m, err := onnxmodel.Default(onnxmodel.DefaultSeed).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return orttest.Open(b, "default", m, ort.Options{IntraOpThreads: 1})
}

func mlpInput(r *rand.Rand) tensor.Tensor { return mlpRow(r) }

func imageInput(r *rand.Rand) tensor.Tensor {
	x := make([]float32, 3*224*224)
	for i := range x {
		x[i] = r.Float32()
	}
	return tensor.Tensor{Name: "input", DType: tensor.FP32, Shape: []int64{1, 3, 224, 224}, Data: orttest.F32Bytes(x)}
}

// benchmarkBatcher marks every aloneEvery-th request of each client Alone
// (0: none).
func benchmarkBatcher(b *testing.B, s *ort.Session, cfg batch.Config, input func(*rand.Rand) tensor.Tensor, aloneEvery int) {
	bt, err := batch.New(cfg, s.Metadata(), runAll(s))
	if err != nil {
		b.Fatal(err)
	}
	defer bt.Close()
	if err := bt.WarmUp(); err != nil {
		b.Fatal(err)
	}
	x := input(rand.New(rand.NewPCG(1, 1)))
	b.SetParallelism((benchClients + 1) / 2) // × GOMAXPROCS (2) goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req := batch.Request{Inputs: []tensor.Tensor{x}}
		for n := 1; pb.Next(); n++ {
			req.Alone = aloneEvery > 0 && n%aloneEvery == 0
			if _, err := bt.Submit(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "infer/s")
	st := bt.Stats()
	if st.ExecutionCount > 0 {
		b.ReportMetric(float64(st.InferenceCount)/float64(st.ExecutionCount), "rows/batch")
	}
}

// BenchmarkDefaultRawBatch1 and BenchmarkDefaultRawBatch8 run the default
// model straight through ORT from two goroutines, like the two instances
// above, with no batcher: the ceiling the served numbers compare against.
func BenchmarkDefaultRawBatch1(b *testing.B) { benchmarkRaw(b, openDefault(b), 1) }

func BenchmarkDefaultRawBatch8(b *testing.B) { benchmarkRaw(b, openDefault(b), 8) }

func benchmarkRaw(b *testing.B, s *ort.Session, rows int) {
	x := imageInput(rand.New(rand.NewPCG(1, 1)))
	data := make([]byte, 0, rows*len(x.Data))
	for range rows {
		data = append(data, x.Data...)
	}
	x.Shape[0], x.Data = int64(rows), data
	if _, err := s.Run([]tensor.Tensor{x}, nil); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(1) // one goroutine per core
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Run([]tensor.Tensor{x}, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "infer/s")
}
