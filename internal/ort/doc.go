// Package ort is the one place that talks to ONNX Runtime. It loads the
// shared library once per process (Init), opens models as Sessions, and runs
// them on tensor.Tensor values, so no other package imports onnxruntime_go
// or deals with ORT values and their lifetimes.
//
// Invariants:
//
//   - The ORT environment is process-global: Init succeeds at most once per
//     process, for one library path, and is never torn down.
//   - A Session is safe for concurrent Run calls; ORT's session Run is
//     thread-safe and this package keeps no per-call state on the Session.
//   - Run never hands ORT a tensor it has not validated against the model's
//     metadata, and every ORT value it creates is released before Run
//     returns, on every path.
//   - RunContext stops a run when its context ends, through ORT's
//     terminate flag (terminate.go), which ORT checks between nodes: a
//     node that does not return is not stopped. Runs through an I/O
//     binding (output binding, models with no inputs) included.
//   - Input Data is passed to ORT without a copy (unless it is misaligned
//     for its element type, or BYTES, which is copied into ORT strings);
//     output Data is Go memory owned by the caller, with no tie to ORT once
//     Run returns.
//
// Execution providers: a session on a GPU (Options.CUDA) gets TensorRT
// (when GPUOptions.TensorRT.Enable) then CUDA then the CPU, in that order of
// preference; a provider the library or machine cannot give fails Open with
// a *ProviderError (ErrProviderUnavailable), never a silent CPU fallback.
// CUDA graphs (CUDAOptions.CUDAGraph) are refused before any provider is
// asked (ErrCUDAGraph, cudagraph.go): a replayed graph ignores Run's new
// input and output buffers.
// AvailableProviders and CheckProvider answer without a GPU whether a
// library could: the CPU build from npm lists CUDA and TensorRT but lacks
// their provider libraries (libonnxruntime_providers_*.so), so only both
// checks together say no.
//
// Output binding (Options.Outputs, outbind.go): off by default. With
// OutputsPinned, a GPU session's outputs are bound to CUDA pinned host
// memory that ORT allocates and owns for the length of one Run; Run copies
// each output from there into Go memory once and releases the pinned
// buffer before it returns, so the invariant above still holds. Pinned
// outputs without CUDA, or an output ORT put elsewhere than bound (the CPU
// build given "CudaPinned"), fail with ErrOutputBinding.
//
// onnxruntime_go v1.27.0 pitfalls this package works around are described
// where they are handled: FP16/BF16 outputs (outshape.go), rank-0 tensors
// (scalar.go), tensors with no elements (run.go), models with no inputs
// (noinputs.go: its Run panics on them) and STRING tensors (strings.go).
package ort
