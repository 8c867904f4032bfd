package ort

import (
	"errors"
	"fmt"
)

// ErrCUDAGraph is Open's refusal of CUDAOptions.CUDAGraph. ONNX Runtime
// captures a session's first run into a CUDA graph and, from the second
// on, Run only replays it: it neither copies the new inputs nor fills the
// outputs asked for, and the graph reads and writes the device addresses
// of the first run (its CUDA provider documentation: shapes must not
// change across runs, and inputs and outputs must be bound with I/O
// binding to memory that stays put). Run here hands ONNX Runtime new Go
// memory on every call, concurrent calls share the session, and batching
// changes the batch dimension from run to run, so every answer after the
// first would be stale or missing.
var ErrCUDAGraph = errors.New("CUDA graphs (enable_cuda_graph) are not supported: ONNX Runtime replays the first run's " +
	"input and output buffers and shapes, while every run here brings new buffers and batching varies the batch size, " +
	"so every answer after the first would be wrong")

// checkCUDAGraph refuses o.CUDAGraph before any provider is asked, so that
// the refusal is the same with or without a GPU.
func checkCUDAGraph(o CUDAOptions) error {
	if o.CUDAGraph {
		return fmt.Errorf("%w (set providers.cuda.enable_cuda_graph: false for this model, or in infer.providers)", ErrCUDAGraph)
	}
	return nil
}
