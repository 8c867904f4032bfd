// Package ort is the one place that talks to ONNX Runtime: it loads the
// shared library once per process (Init), opens models as Sessions and
// runs them on tensor.Tensor values, so no other package imports
// onnxruntime_go or deals with ORT values and their lifetimes.
//
// Invariants:
//
//   - The ORT environment is process-global: Init succeeds at most once
//     per process, for one library path, and is never torn down.
//   - A Session is safe for concurrent Run calls; it keeps no per-call state.
//   - Run never hands ORT a tensor it has not validated against the model's
//     metadata, and releases every ORT value it creates before it returns,
//     on every path. Output Data is Go memory owned by the caller, also
//     with output binding (outbind.go), whose pinned buffers live one Run.
//   - Input Data goes to ORT without a copy, unless misaligned for its
//     element type or BYTES (copied into ORT strings, strings.go).
//   - RunContext stops a run when its context ends, through ORT's terminate
//     flag (terminate.go), checked between nodes: a node that never returns
//     is not stopped.
//   - A provider the library or machine cannot give fails Open with a
//     *ProviderError, never a silent CPU fallback; CUDA graphs are refused
//     before any provider is asked (ErrCUDAGraph, cudagraph.go).
//   - Without a GPU, AvailableProviders says what a library was built
//     with and TryProvider whether a provider's libraries load: a
//     provider listed may still fail to start.
//
// Pitfalls: onnxruntime_go v1.27.0's own are worked around where they are
// handled: FP16/BF16 outputs (outshape.go), rank-0 tensors (scalar.go),
// empty tensors (run.go), models with no inputs (noinputs.go) and STRING
// tensors (strings.go). Providers and output binding for operators:
// docs/gpu-hosts.md.
package ort
