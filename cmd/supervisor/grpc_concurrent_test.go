package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/ort/orttest"
	"github.com/supervisor-dev/supervisor/internal/tensor"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// TestGRPCConcurrentTensorsArriveIntact: 64 clients on two connections
// each send ModelInfer RPCs of distinct inputs (256 rows of the MLP, 16
// KB: several HTTP/2 frames), and every answer is the in-process
// model's output for that RPC's own rows. raw_input_contents point into
// the buffer a message was received in (grpcfront's
// unmarshalInferRequest): a buffer freed or reused too early would hand
// one RPC another's tensors, or garbage, and only concurrency shows it.
func TestGRPCConcurrentTensorsArriveIntact(t *testing.T) {
	const (
		poolRows = 4096
		rows     = 256
		clients  = 64
		rounds   = 8
	)
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"}})
	orttest.Init(t)
	pool := make([]float32, poolRows*16)
	for i := range pool {
		pool[i] = float32(math.Sin(float64(i)*0.37+float64(i/16)*1.3)) * 2
	}
	outs, err := openLocal(t, "mlp.onnx").Run([]tensor.Tensor{{Name: "x", DType: tensor.FP32, Shape: []int64{poolRows, 16},
		Data: orttest.F32Bytes(pool)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := outs[0].Data // 4 FP32 a row
	if len(want) != poolRows*16 {
		t.Fatalf("the local model answered %d bytes for %d rows, want 16 a row", len(want), poolRows)
	}
	conns := []pb.GRPCInferenceServiceClient{
		pb.NewGRPCInferenceServiceClient(dialGRPC(t, in)), pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))}

	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds {
				start := (c*rounds + k) * 13 % poolRows // each RPC's own rows
				x := make([]float32, 0, rows*16)
				var expect []byte
				for r := range rows {
					row := (start + r) % poolRows
					x = append(x, pool[row*16:row*16+16]...)
					expect = append(expect, want[row*16:row*16+16]...)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				req := mlpRequest(fmt.Sprint("c", c, "-", k), x)
				req.Inputs[0].Shape = []int64{rows, 16}
				resp, err := conns[c%2].ModelInfer(ctx, req)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("client %d, RPC %d: %v", c, k, err)
					return
				}
				if err := sameFP32(resp.GetRawOutputContents(), expect); err != nil {
					errs <- fmt.Errorf("client %d, RPC %d (rows %d to %d): %v", c, k, start, start+rows-1, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// sameFP32 says how raw (one output) differs from want beyond float
// rounding: a batch may be computed with other kernels than the
// reference's.
func sameFP32(raw [][]byte, want []byte) error {
	if len(raw) != 1 || len(raw[0]) != len(want) {
		return fmt.Errorf("answered %d outputs, want one of %d bytes", len(raw), len(want))
	}
	for i := 0; i < len(want); i += 4 {
		g := math.Float32frombits(binary.LittleEndian.Uint32(raw[0][i:]))
		w := math.Float32frombits(binary.LittleEndian.Uint32(want[i:]))
		if d := math.Abs(float64(g - w)); d > 1e-4+1e-4*math.Abs(float64(w)) || math.IsNaN(float64(g)) {
			return fmt.Errorf("output value %d (row %d) is %g, want %g", i/4, i/16, g, w)
		}
	}
	return nil
}
